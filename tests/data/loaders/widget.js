// A tiny widget.
export function widget(name) {
  return `<b>${name}</b>`;
}
