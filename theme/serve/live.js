// Live reload for `nanopedia serve`; never part of a built site. Asks the server for news by
// loading a script, /__live/state.js?seen=N, which the server holds until the next build (or a
// timeout) and which calls window.nanopediaLive with the state: a script, because every page's
// CSP allows same-origin scripts (this one is one) while the diagnosis page forbids all
// connections, an EventSource included. A new build reloads the page, a failed build shows its
// problems in an overlay, and the next good build (a reload) clears it. DOM built with
// textContent only: problem text is data.
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

  const RETRY_MS = 1000; // after a failed poll: the server is restarting, or gone
  let seen = -1; // the serial of the last state heard; the server answers when it changes

  function poll() {
    const script = document.createElement("script");
    script.src = `/__live/state.js?seen=${seen}`;
    script.onload = () => { script.remove(); poll(); };
    script.onerror = () => { script.remove(); setTimeout(poll, RETRY_MS); };
    document.head.append(script);
  }

  window.nanopediaLive = (state) => {
    seen = state.serial;
    if (shown === null) shown = state.version;
    if (state.problems.length) {
      show(state.problems);
    } else if (state.version !== shown) {
      location.reload();
    } else {
      hide();
    }
  };

  // Polls start after `load`: a script still loading would hold the page's load event back.
  if (document.readyState === "complete") {
    poll();
  } else {
    window.addEventListener("load", poll, { once: true });
  }
})();
