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

// On a phone a table with a header row shows one block per row (app.css); each cell is headed by its
// column's name, copied here from the header into data-label (CSS shows it; it is the page's own text).
function labelCells(root) {
  root.querySelectorAll("table").forEach(function (table) {
    const heads = Array.from(table.querySelectorAll("thead th")).map(function (th) {
      return th.textContent.trim();
    });
    if (heads.length === 0) {
      return;
    }
    table.querySelectorAll("tbody tr").forEach(function (row) {
      Array.from(row.children).forEach(function (cell, i) {
        if (heads[i]) {
          cell.dataset.label = heads[i];
        }
      });
    });
  });
}

// How often a live page asks whether anything changed (one small statement on the server).
const LIVE_EVERY_MS = 3000;

// Whether the person is in the middle of something a swap would lose: typing (a reason, a filter, an
// answer), a reason or an answer written and not sent, or a confirmation ("Abandon…") open.
function busy(main) {
  const active = document.activeElement;
  if (active && main.contains(active) && active.matches("input[type=text], input:not([type]), input[type=search], textarea, select")) {
    return true;
  }
  if (main.querySelector("details[open]")) {
    return true;
  }
  return Array.from(main.querySelectorAll("input[name=reason], textarea")).some(function (i) {
    return i.value !== "";
  });
}

// What has the keyboard inside `main`, in words that find the same control in a fresh copy of the page:
// its id; else, for a link, where it goes and what it says; else, for a button, its form's action and
// its text. Null when the focus is elsewhere (or on <main> itself).
function focusKey(main) {
  const el = document.activeElement;
  if (!el || el === main || !main.contains(el)) {
    return null;
  }
  if (el.id) {
    return { id: el.id };
  }
  if (el.matches("a[href]")) {
    return { selector: "a[href]", attr: el.getAttribute("href"), text: el.textContent };
  }
  if (el.matches("button") && el.form) {
    return { selector: "button", attr: el.form.getAttribute("action"), text: el.textContent };
  }
  return {};
}

// Puts the keyboard back on the control `key` names in the new content, without scrolling. A control
// that is gone leaves the focus on <main> (where "Skip to content" puts it), never on the page's body,
// which would send the next Tab back to the top of the page.
function refocus(main, key) {
  let el = null;
  if (key.id) {
    el = document.getElementById(key.id);
  } else if (key.selector) {
    el = Array.from(main.querySelectorAll(key.selector)).find(function (c) {
      const attr = key.selector === "button" ? (c.form && c.form.getAttribute("action")) : c.getAttribute("href");
      return attr === key.attr && c.textContent === key.text;
    });
  }
  (el && main.contains(el) ? el : main).focus({ preventScroll: true });
}

// Says a live update out loud (the polite live region outside <main>, so it is never replaced): the
// page's heading as it now reads, once per update, not on every look.
function announce(main) {
  const region = document.getElementById("live-status");
  const heading = main.querySelector("h1");
  if (region) {
    region.textContent = "Updated: " + (heading ? heading.textContent.trim().replace(/\s+/g, " ") : document.title);
  }
}

// The tab's title carries how many items "Needs you" holds — "(3) Needs you · executor" — so a person
// working in another tab sees when something waits. Asked when a page opens and when the change mark
// moves (GET /needs-count counts; it reads no item).
const TITLE_COUNT = /^\(\d+\) /;

// Browser notifications, opt-in: off until the person turns them on (remembered in localStorage), and
// one notification when the count grows past the one last seen — not on a refresh, and once for all
// tabs (they share what was seen, and the notification's tag).
const NOTIFY_KEY = "executor.notify";
const SEEN_KEY = "executor.needsSeen";

function stored(key) {
  try {
    return window.localStorage.getItem(key);
  } catch (e) {
    return null; // storage refused (a private window's settings): nothing remembered
  }
}

function store(key, value) {
  try {
    window.localStorage.setItem(key, value);
  } catch (e) {
    // Not remembered: the next page starts from the default again.
  }
}

function canNotify() {
  return "Notification" in window;
}

function notifying() {
  return canNotify() && stored(NOTIFY_KEY) === "on" && Notification.permission === "granted";
}

function notifyIfNew(total) {
  const seen = parseInt(stored(SEEN_KEY) || "", 10);
  store(SEEN_KEY, String(total));
  if (!notifying() || Number.isNaN(seen) || total <= seen) {
    return;
  }
  const added = total - seen;
  try {
    new Notification("executor: " + added + (added === 1 ? " new item needs" : " new items need") + " you", {
      body: total + " waiting in all on Needs you",
      tag: "executor-needs-you",
    });
  } catch (e) {
    // A browser that notifies only from a service worker: the title still says it.
  }
}

async function showNeedsCount() {
  try {
    const answer = await fetch("/needs-count", { credentials: "same-origin", headers: { Accept: "application/json" } });
    if (!answer.ok) {
      return;
    }
    const total = (await answer.json()).total;
    if (typeof total !== "number") {
      return;
    }
    const bare = document.title.replace(TITLE_COUNT, "");
    document.title = total > 0 ? "(" + total + ") " + bare : bare;
    notifyIfNew(total);
  } catch (e) {
    // The server is away for a moment: the next change asks again.
  }
}

// The header's "Notify me" button: shown only where the browser can notify; turning it on asks the
// browser's permission first.
function notifyToggle(button) {
  if (!canNotify()) {
    return;
  }
  function show() {
    const on = notifying();
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.textContent = on ? "Notifications on" : Notification.permission === "denied" ? "Notifications blocked" : "Notify me";
  }
  button.hidden = false;
  show();
  button.addEventListener("click", async function () {
    if (notifying()) {
      store(NOTIFY_KEY, "off");
    } else {
      const permission = await Notification.requestPermission();
      store(NOTIFY_KEY, permission === "granted" ? "on" : "off");
    }
    show();
  });
}

// A live page (<main data-live="MARK">): asks /changes every few seconds; when the mark moved, fetches
// the same address again and puts the new <main> in place of the old one. The document stays, so the
// scroll position stays; the rows that were selected are selected again. The new markup is the
// server's own page for this session, parsed by DOMParser (whose scripts never run), not task text.
function followChanges(main) {
  let inFlight = false;
  async function look() {
    if (inFlight || document.hidden || busy(main)) {
      return;
    }
    inFlight = true;
    try {
      const answer = await fetch("/changes", { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!answer.ok) {
        return;
      }
      const mark = (await answer.json()).mark;
      if (mark === main.dataset.live) {
        return;
      }
      showNeedsCount();
      const page = await fetch(window.location.href, { credentials: "same-origin" });
      if (!page.ok) {
        return;
      }
      const doc = new DOMParser().parseFromString(await page.text(), "text/html");
      const fresh = doc.querySelector("main[data-live]");
      if (!fresh || busy(main)) {
        return;
      }
      const selected = new Set(Array.from(main.querySelectorAll("input.select:checked")).map(function (c) {
        return c.value;
      }));
      const all = document.getElementById("select-all");
      const allChecked = all ? all.checked : false;
      const focused = main.contains(document.activeElement) && document.activeElement !== main;
      const key = focusKey(main);
      main.replaceChildren(...Array.from(fresh.childNodes).map(function (n) {
        return document.adoptNode(n);
      }));
      main.dataset.live = fresh.dataset.live;
      main.querySelectorAll("input.select").forEach(function (c) {
        c.checked = selected.has(c.value);
      });
      const box = document.getElementById("select-all");
      if (box) {
        box.checked = allChecked;
        selectAll(box);
      }
      labelCells(main);
      if (key) {
        refocus(main, key);
      }
      announce(main);
      // keys.js puts its selection (and the focus, if it was on the page) back on the same row.
      main.dispatchEvent(new CustomEvent("executor:replaced", { bubbles: true, detail: { focused: focused } }));
    } catch (e) {
      // The server is away for a moment (restarting): the next look tries again.
    } finally {
      inFlight = false;
    }
  }
  window.setInterval(look, LIVE_EVERY_MS);
  document.addEventListener("visibilitychange", look);
}

document.addEventListener("DOMContentLoaded", function () {
  const live = document.querySelector("main[data-live]");
  if (live) {
    followChanges(live);
  }
  const pre = document.getElementById("log");
  if (pre) {
    followLog(pre);
  }
  const box = document.getElementById("select-all");
  if (box) {
    selectAll(box);
  }
  labelCells(document);
  // Logged in (the header has Log out): the title's count, and the notifications' button.
  if (document.querySelector("form.logout")) {
    showNeedsCount();
    const toggle = document.getElementById("notify-toggle");
    if (toggle) {
      notifyToggle(toggle);
    }
  }
});
