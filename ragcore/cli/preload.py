"""`ragcore ask`'s model, loaded from the first moment: the one step of a cold question that can
run beside the others. Kept free of heavy imports (numpy, ragcore's pipeline): they happen in its
thread."""

from __future__ import annotations

import threading


class ModelPreload:
    """The bundled model, loading in a thread from the moment the command line says `ask`.

    Every question needs it, and its load (importing onnxruntime, then building the session, which
    releases the GIL) is the longest step of a cold question: started before the options are
    parsed and ragcore's pipeline is imported, it runs while they do instead of after them."""

    def __init__(self) -> None:
        self.encoder = None
        self._made = threading.Event()
        self._thread = threading.Thread(target=self._load, name="onnx-preload", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        try:
            from ragcore.encoders.minilm import OnnxMiniLM

            self.encoder = OnnxMiniLM()
        finally:
            self._made.set()
        self.encoder._try_load()

    def take(self, batch_size: int):
        """The encoder (its first use waits for the load), or None if it could not even be made."""
        self._made.wait()
        if self.encoder is not None:
            self.encoder.batch_size = batch_size
        return self.encoder

    def settle(self) -> None:
        """A process must not end while onnxruntime builds a session in another thread (onnx_folder.settle)."""
        self._thread.join()
