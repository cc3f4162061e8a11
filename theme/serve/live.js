// Live reload for `nanopedia serve`; never part of a built site. Listens to the server's event
// stream: a new build reloads the page, a failed build shows its problems in an overlay, and the
// next good build (a reload) clears it. DOM built with textContent only: problem text is data.
(() => {
  "use strict";
  const OVERLAY_ID = "nanopedia-live-overlay";
  let shown = null; // the build this page came from: the version at the first event

  function hide() {
    const old = document.getElementById(OVERLAY_ID);
    if (old) old.remove();
  }

  function show(problems) {
    hide();
    if (!document.querySelector('link[href="/__live.css"]')) {
      const sheet = document.createElement("link");
      sheet.rel = "stylesheet";
      sheet.href = "/__live.css";
      document.head.append(sheet);
    }
    const box = document.createElement("section");
    box.id = OVERLAY_ID;
    box.setAttribute("role", "alert");
    const title = document.createElement("h2");
    title.textContent = `Build failed: ${problems.length} problem(s)`;
    const note = document.createElement("p");
    note.textContent = "The page below is the last good build. Fix the file and save; this " +
      "overlay goes away with the next good build.";
    const list = document.createElement("pre");
    list.textContent = problems.map((p) => p.text).join("\n");
    box.append(title, note, list);
    document.body.append(box);
  }

  const source = new EventSource("/__live");
  source.addEventListener("state", (event) => {
    const state = JSON.parse(event.data);
    if (shown === null) shown = state.version;
    if (state.problems.length) {
      show(state.problems);
    } else if (state.version !== shown) {
      location.reload();
    } else {
      hide();
    }
  });
})();
