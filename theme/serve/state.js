// One answer of the live-reload poll of `nanopedia serve` (read by theme/serve/live.js); never
// part of a built site. The state is JSON, escaped for HTML by `tojson`, so it is one literal.
window.nanopediaLive({{ state | tojson }});
