// executor's dashboard: small enhancements over pages that work without this script.
// No inline script anywhere (the Content-Security-Policy forbids it), and never innerHTML: text from
// tasks and logs is added as text nodes only.
"use strict";

// The live log: follows /sessions/{id}/log/stream (server-sent events) from where the page's text ends.
function followLog(pre) {
  // A log opens at its end, where the worker writes.
  window.scrollTo(0, document.body.scrollHeight);
  if (!window.EventSource || pre.dataset.ended) {
    return;
  }
  const url = pre.dataset.stream + "?from=" + encodeURIComponent(pre.dataset.offset || "0");
  const source = new EventSource(url);
  source.onmessage = function (event) {
    const atBottom = window.innerHeight + window.scrollY >= document.body.offsetHeight - 20;
    pre.appendChild(document.createTextNode(event.data));
    if (atBottom) {
      window.scrollTo(0, document.body.scrollHeight);
    }
  };
  // The worker ended and everything is shown: stop, or EventSource would reconnect.
  // The page then says how it ended instead of "running".
  source.addEventListener("end", function (event) {
    source.close();
    pre.classList.add("ended");
    const state = document.getElementById("log-state");
    if (state) {
      state.textContent = "ended (" + event.data + ")";
      state.classList.remove("live");
    }
    const hint = document.getElementById("log-hint");
    if (hint) {
      hint.remove();
    }
  });
}

// "Select all" for the queue's bulk approval.
function selectAll(box) {
  box.addEventListener("change", function () {
    document.querySelectorAll("input.select").forEach(function (c) {
      c.checked = box.checked;
    });
  });
}

document.addEventListener("DOMContentLoaded", function () {
  const pre = document.getElementById("log");
  if (pre) {
    followLog(pre);
  }
  const box = document.getElementById("select-all");
  if (box) {
    selectAll(box);
  }
});
