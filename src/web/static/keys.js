// executor's keyboard shortcuts, over pages that work without them: j/k move a visible selection
// through the rows of a list (the queue's rows, the items of "Needs you"), x/a/s/o act on the selected
// row through the row's own checkbox, forms and link (the same forms, the same CSRF field), g + a letter
// goes to a page, ? shows them all. Nothing fires while you type in a field or hold a modifier key.
// Text is added as text nodes only, never as markup.
"use strict";

// The help lists these, in this order; the handler below is the one place they are acted on.
const SHORTCUTS = [
  [["j"], "next row"],
  [["k"], "previous row"],
  [["x"], "select the row for Approve selected / Skip selected"],
  [["a"], "approve the row"],
  [["s"], "skip the row: type the reason, then Enter"],
  [["o"], "open the row (or Enter)"],
  [["g", "n"], "go to Needs you"],
  [["g", "q"], "go to the queue"],
  [["g", "r"], "go to the runs"],
  [["?"], "show this help"],
  [["Esc"], "close this help; leave a reason field"],
];
const GO = { n: "/", q: "/queue", r: "/runs" };
// The rows j/k move through. Each is known by its first link (and its section on "Needs you"), so a
// live refresh or a reload can find the same row again.
const ROWS = "main table.queue tbody tr, main .needs-list > li";
// Where the row to select after a reload is kept (this tab only), when a form of the selected row is sent.
const REMEMBER = "executor.selected-row";

let selectedKey = null;
let afterG = false;

function rows() {
  return Array.from(document.querySelectorAll(ROWS));
}

function keyOf(row) {
  const section = row.closest("section[id]");
  const link = row.querySelector("a[href]");
  return (section ? section.id : "") + " " + (link ? link.getAttribute("href") : "");
}

function selectedRow() {
  return rows().find(function (r) {
    return r.classList.contains("kb-selected");
  });
}

// Marks `row` as the selection; with `focus`, the keyboard goes to its link (a screen reader says it).
function select(row, focus, scroll) {
  rows().forEach(function (r) {
    r.classList.remove("kb-selected");
  });
  row.classList.add("kb-selected");
  selectedKey = keyOf(row);
  const link = row.querySelector("a[href]");
  if (focus && link) {
    link.focus({ preventScroll: !scroll });
  }
  if (scroll) {
    row.scrollIntoView({ block: "nearest" });
  }
}

function move(step) {
  const all = rows();
  if (all.length === 0) {
    return;
  }
  // From the row the keyboard is in (Tab got there), else from the selection.
  let at = all.findIndex(function (r) {
    return r.contains(document.activeElement);
  });
  if (at < 0) {
    at = all.indexOf(selectedRow());
  }
  const next = at < 0 ? (step > 0 ? 0 : all.length - 1) : Math.min(all.length - 1, Math.max(0, at + step));
  select(all[next], true, true);
}

// Says what a key could not do, to a screen reader and on screen.
function say(text) {
  let line = document.getElementById("kb-status");
  if (!line) {
    line = document.createElement("p");
    line.id = "kb-status";
    line.className = "note";
    line.setAttribute("role", "status");
    const main = document.querySelector("main");
    if (!main) {
      return;
    }
    main.prepend(line);
  }
  line.textContent = text;
}

function act(key, row) {
  if (key === "x") {
    const box = row.querySelector("input.select");
    return box ? box.click() : say("This row cannot be selected.");
  }
  if (key === "a") {
    const button = Array.from(row.querySelectorAll("form[action$='/approve'] button[type=submit]")).find(function (b) {
      return !b.closest("details");
    });
    return button ? button.click() : say("This row has no Approve.");
  }
  if (key === "s") {
    const reason = row.querySelector("form[action$='/skip'] input[name=reason]");
    return reason ? reason.focus() : say("This row has no Skip.");
  }
  const link = row.querySelector("a[href]");
  if (link) {
    link.click();
  }
}

// A field being typed in: the keys are its text, not shortcuts.
function typing(el) {
  return el instanceof Element && el.matches(
    "textarea, select, [contenteditable], input:not([type=checkbox]):not([type=radio]):not([type=button]):not([type=submit])",
  );
}

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
    return;
  }
  const help = document.getElementById("shortcuts");
  if (help && help.open) {
    return;
  }
  const target = event.target;
  if (typing(target)) {
    // Esc leaves a reason field for its row, where j/k work again.
    const row = target.closest(ROWS);
    if (event.key === "Escape" && row) {
      select(row, true, false);
    }
    return;
  }
  const key = event.key;
  if (afterG) {
    afterG = false;
    if (GO[key]) {
      event.preventDefault();
      window.location.assign(GO[key]);
    }
    return;
  }
  if (key === "?") {
    event.preventDefault();
    showHelp();
  } else if (key === "g") {
    afterG = true;
  } else if (key === "j" || key === "k") {
    event.preventDefault();
    move(key === "j" ? 1 : -1);
  } else if (["x", "a", "s", "o", "Enter"].includes(key)) {
    // Enter on a link or a button is theirs (it opens or presses them).
    if (key === "Enter" && target.closest("a, button, summary, input")) {
      return;
    }
    const row = selectedRow();
    if (row) {
      event.preventDefault();
      act(key === "Enter" ? "o" : key, row);
    }
  }
}

// The help: a modal <dialog> (the page behind it inert), Tab kept inside, Esc or Close closes it and the
// keyboard goes back where it was.
function showHelp() {
  let help = document.getElementById("shortcuts");
  if (!help) {
    help = helpDialog();
    document.body.appendChild(help);
  }
  const back = document.activeElement;
  help.addEventListener("close", function () {
    if (back && back !== document.body && document.contains(back)) {
      back.focus();
    }
  }, { once: true });
  help.showModal();
  help.querySelector("button").focus();
}

function helpDialog() {
  const help = document.createElement("dialog");
  help.id = "shortcuts";
  help.className = "shortcuts";
  help.setAttribute("aria-labelledby", "shortcuts-title");
  const title = document.createElement("h2");
  title.id = "shortcuts-title";
  title.textContent = "Keyboard shortcuts";
  const note = document.createElement("p");
  note.textContent = "Rows: on Needs you and the queue. No shortcut acts while you type in a field.";
  const list = document.createElement("dl");
  SHORTCUTS.forEach(function ([keys, what]) {
    const dt = document.createElement("dt");
    keys.forEach(function (k, i) {
      const kbd = document.createElement("kbd");
      kbd.textContent = k;
      dt.append(i ? " then " : "", kbd);
    });
    const dd = document.createElement("dd");
    dd.textContent = what;
    list.append(dt, dd);
  });
  const close = document.createElement("button");
  close.type = "button";
  close.textContent = "Close";
  close.addEventListener("click", function () {
    help.close();
  });
  help.append(title, note, list, close);
  help.addEventListener("keydown", function (event) {
    if (event.key !== "Tab") {
      return;
    }
    const inside = Array.from(help.querySelectorAll("button, a[href], input, select, textarea"));
    const at = inside.indexOf(document.activeElement);
    event.preventDefault();
    const next = (at + (event.shiftKey ? inside.length - 1 : 1)) % inside.length;
    inside[at < 0 ? 0 : next].focus();
  });
  return help;
}

// The header's way to the help, for a mouse or a phone (the page has no shortcuts without this script).
function helpButton() {
  const nav = document.querySelector("header nav");
  if (!nav) {
    return;
  }
  const button = document.createElement("button");
  button.type = "button";
  button.className = "shortcuts-button";
  button.textContent = "Shortcuts";
  button.setAttribute("aria-keyshortcuts", "?");
  button.addEventListener("click", showHelp);
  nav.appendChild(button);
}

// A form of the selected row is sent (a, or s + Enter): after the reload, the row below is selected.
function rememberNext(event) {
  const row = event.target.closest(ROWS);
  if (!row || !row.classList.contains("kb-selected")) {
    return;
  }
  const all = rows();
  const at = all.indexOf(row);
  const next = all[at + 1] || all[at - 1];
  if (next) {
    sessionStorage.setItem(REMEMBER, JSON.stringify({ page: window.location.pathname, key: keyOf(next) }));
  }
}

function recall() {
  const kept = sessionStorage.getItem(REMEMBER);
  sessionStorage.removeItem(REMEMBER);
  try {
    const { page, key } = JSON.parse(kept || "{}");
    const row = page === window.location.pathname && rows().find(function (r) {
      return keyOf(r) === key;
    });
    if (row) {
      select(row, true, true);
    }
  } catch (e) {
    // Not ours, or from an older script: nothing to select.
  }
}

document.addEventListener("DOMContentLoaded", function () {
  helpButton();
  recall();
  document.addEventListener("keydown", onKey);
  document.addEventListener("submit", rememberNext);
  // A live refresh (app.js) replaced the page's content: the same row is selected again, and has the
  // keyboard again if it had it; the page does not scroll.
  document.addEventListener("executor:replaced", function (event) {
    const row = selectedKey && rows().find(function (r) {
      return keyOf(r) === selectedKey;
    });
    if (row) {
      select(row, event.detail.focused, false);
    }
  });
});
