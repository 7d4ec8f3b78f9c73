"""ragcore's benchmarks (``ragcore bench …`` from a checkout): commands, data builders and the committed results. Not part of the installed package."""
