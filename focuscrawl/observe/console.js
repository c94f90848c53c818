// The focuscrawl console's page: asks the console's API for the crawl's figures every few seconds
// and draws them. Everything that came from crawled pages (titles, URLs, text) is hostile: it is
// only ever put in the page as text (textContent), and only http(s) URLs become links.
"use strict";

(function () {
  const TOKEN = new URLSearchParams(location.search).get("token") || "";
  const REFRESH_MS = 2000;
  const LABEL_KEYS = { o: "on-topic", f: "off-topic", s: "skip" };

  let curveVersion = null;
  let candidates = [];
  let selected = 0;
  let busy = false;

  // --- talking to the console -------------------------------------------------------------------
  function withToken(path) {
    return path + (path.includes("?") ? "&" : "?") + "token=" + encodeURIComponent(TOKEN);
  }

  async function api(path, options) {
    const init = Object.assign({ headers: {}, cache: "no-store" }, options || {});
    init.headers["X-Focus-Token"] = TOKEN;
    const answer = await fetch(path, init);
    const data = await answer.json().catch(() => ({}));
    if (!answer.ok) {
      throw new Error(data.error || ("HTTP " + answer.status));
    }
    return data;
  }

  // --- building the page, as text only ------------------------------------------------------------
  function el(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (className) node.className = className;
    return node;
  }

  function link(url, text) {
    const value = String(url || "");
    if (!/^https?:\/\//i.test(value)) return el("span", text || value);
    const a = el("a", text || value);
    a.href = value;
    a.rel = "noreferrer noopener";
    a.target = "_blank";
    return a;
  }

  function cell(content, className) {
    const td = el("td", null, className);
    if (content instanceof Node) td.appendChild(content);
    else td.textContent = content === null || content === undefined ? "–" : String(content);
    return td;
  }

  function fillTable(id, rows, makeCells) {
    const body = document.querySelector("#" + id + " tbody");
    const fresh = document.createElement("tbody");
    rows.forEach((row, i) => {
      const tr = el("tr");
      for (const td of makeCells(row, i)) tr.appendChild(td);
      fresh.appendChild(tr);
    });
    body.replaceWith(fresh);
  }

  function number(value, digits) {
    if (value === null || value === undefined || Number.isNaN(value)) return "–";
    return typeof value === "number" ? value.toFixed(digits) : String(value);
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "–";
    const s = Math.round(seconds);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + "h" : "") + (h || m ? String(m).padStart(h ? 2 : 1, "0") + "m" : "") + String(r).padStart(h || m ? 2 : 1, "0") + "s";
  }

  function why(parts) {
    if (typeof parts === "string") return parts;
    if (!Array.isArray(parts) || !parts.length) return "(not recorded)";
    return parts.map((p) => p[0] + " " + (p[1] >= 0 ? "+" : "") + Number(p[1]).toFixed(4)).join(", ");
  }

  // --- the figures ---------------------------------------------------------------------------------
  function showSnapshot(state) {
    const s = state.snapshot || {};
    document.title = state.title || "focuscrawl console";
    document.getElementById("title").textContent = state.title || "focuscrawl";
    document.getElementById("kind").textContent = state.kind === "live" ? "live crawl" : "stored crawl";
    const badge = document.getElementById("state");
    const reason = s.end_reason && s.end_reason !== "finished" ? " (" + s.end_reason + ")" : "";
    badge.textContent = s.finished ? "finished" + reason : "running";
    badge.className = "badge" + (s.finished ? " finished" : "");
    const hosts = s.hosts || {};
    const figures = [
      ["relevant found", s.relevant],
      ["requests", s.requests],
      ["pages", s.pages],
      ["harvest", number(s.harvest, 3)],
      ["harvest, last " + (s.recent_window || "") , number(s.harvest_recent, 3)],
      ["pages / s", number(s.pages_per_second, 2)],
      ["elapsed", duration(s.elapsed)],
      ["frontier", s.frontier],
      ["budget", s.budget],
      ["time left", s.eta_seconds === null || s.eta_seconds === undefined ? null : duration(s.eta_seconds)],
    ];
    for (const [name, count] of Object.entries(hosts)) {
      if (count !== null && count !== undefined) figures.push(["hosts " + name, count]);
    }
    const list = document.getElementById("snapshot");
    const fresh = el("dl");
    fresh.id = "snapshot";
    for (const [name, value] of figures) {
      const box = el("div");
      box.appendChild(el("dt", name));
      const dd = el("dd", value === null || value === undefined ? "–" : value);
      dd.dataset.figure = name.split(",")[0];
      box.appendChild(dd);
      fresh.appendChild(box);
    }
    list.replaceWith(fresh);
  }

  function showCurves(version) {
    if (version === curveVersion) return;
    curveVersion = version;
    for (const axis of ["requests", "seconds"]) {
      document.getElementById("curve-" + axis).src =
        withToken("api/curve.svg?x=" + axis + "&v=" + encodeURIComponent(version));
    }
  }

  function showTables(state) {
    fillTable("hosts", state.hosts || [], (h) => [
      cell(h.host), cell(h.state), cell(h.fetched, "n"), cell(h.relevant, "n"), cell(number(h.yield, 3), "n"),
      cell(h.waste, "n"), cell(number(h.delay, 2), "n"), cell(h.queued, "n"),
    ]);
    fillTable("top", state.top || [], (t, i) => [
      cell(i + 1, "n"), cell(link(t.url)), cell(number(t.priority, 4), "n"), cell(why(t.why), "why"),
    ]);
    if (!(state.top || []).length) {
      fillTable("top", [state.kind === "live" ? "nothing waiting" :
        "not known: a stored crawl's frontier is read from its JOBDIR (scrapy console --jobdir DIR)"],
      (note) => { const td = cell(note, "quiet"); td.colSpan = 4; return [td]; });
    }
    fillTable("latest", state.latest || [], (p) => {
      const page = el("span");
      page.appendChild(el("div", p.title || "(no title)"));
      page.appendChild(link(p.url));
      return [cell(page), cell(number(p.score, 3), "n"), cell(p.fetched_at)];
    });
  }

  async function refresh() {
    try {
      const state = await api(withToken("api/state?latest=12"));
      showSnapshot(state);
      showCurves(state.curve_version);
      showTables(state);
      document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
      document.getElementById("labelling").hidden = !state.labelling;
    } catch (error) {
      document.getElementById("updated").textContent = "not reachable (" + error.message + "): the crawl may be over";
    }
  }

  // --- labelling -----------------------------------------------------------------------------------
  function showQueue() {
    const list = document.getElementById("queue");
    const fresh = el("ol");
    fresh.id = "queue";
    candidates.forEach((c, i) => {
      const item = el("li", null, "candidate" + (i === selected ? " selected" : ""));
      item.dataset.url = c.url;
      item.appendChild(el("div", c.title || "(no title)", "title"));
      item.appendChild(link(c.final_url || c.url));
      item.appendChild(el("div", "score " + number(c.score, 3) + " · " + (c.host || ""), "quiet"));
      item.appendChild(el("div", c.why, "why"));
      item.appendChild(el("div", c.extract, "extract"));
      const whole = el("a", "the whole stored text");
      whole.href = withToken("api/page?url=" + encodeURIComponent(c.url));
      whole.rel = "noreferrer noopener";
      whole.target = "_blank";
      item.appendChild(whole);
      const buttons = el("div");
      for (const [key, label] of Object.entries(LABEL_KEYS)) {
        const button = el("button", label + " (" + key + ")");
        button.type = "button";
        button.dataset.label = label;
        button.addEventListener("click", () => { selected = i; give(label); });
        buttons.appendChild(button);
      }
      item.appendChild(buttons);
      item.addEventListener("click", (event) => {
        if (event.target.tagName !== "BUTTON" && event.target.tagName !== "A") { selected = i; highlight(); }
      });
      fresh.appendChild(item);
    });
    list.replaceWith(fresh);
  }

  function highlight() {
    document.querySelectorAll("#queue .candidate").forEach((node, i) => {
      node.classList.toggle("selected", i === selected);
      if (i === selected) node.scrollIntoView({ block: "nearest" });
    });
  }

  async function loadQueue() {
    const note = document.getElementById("queue-note");
    try {
      const answer = await api(withToken("api/queue?n=10"));
      candidates = answer.candidates || [];
      note.textContent = answer.available ? (candidates.length ? "" : "nothing to label now") : answer.reason;
    } catch (error) {
      candidates = [];
      note.textContent = "the queue is not available: " + error.message;
    }
    selected = Math.min(selected, Math.max(0, candidates.length - 1));
    showQueue();
  }

  async function loadLabels() {
    try {
      const labels = await api(withToken("api/labels?n=20"));
      const list = document.getElementById("labelled");
      const fresh = el("ol", null, "quiet");
      fresh.id = "labelled";
      for (const row of labels) {
        const item = el("li");
        item.appendChild(el("span", row.label + ": "));
        item.appendChild(link(row.url));
        item.appendChild(el("span", " (" + (row.who || "?") + ", " + row.at + ")"));
        fresh.appendChild(item);
      }
      list.replaceWith(fresh);
    } catch (error) { /* shown by the queue's note */ }
  }

  async function give(label) {
    const candidate = candidates[selected];
    if (!candidate || busy) return;
    busy = true;
    const note = document.getElementById("queue-note");
    try {
      await api("api/label", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ url: candidate.url, label: label }),
      });
      await loadQueue();
      await loadLabels();
      // after the queue is shown again: loading it sets the note too
      note.textContent = "labelled " + label + ": " + candidate.url;
    } catch (error) {
      note.textContent = "not labelled: " + error.message;
    } finally {
      busy = false;
    }
  }

  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target instanceof HTMLInputElement || event.target instanceof HTMLTextAreaElement) return;
    const key = event.key.toLowerCase();
    if (key === "j" || key === "k") {
      selected = Math.max(0, Math.min(candidates.length - 1, selected + (key === "j" ? 1 : -1)));
      highlight();
    } else if (LABEL_KEYS[key]) {
      give(LABEL_KEYS[key]);
    }
  });

  refresh().then(() => { loadQueue(); loadLabels(); });
  setInterval(refresh, REFRESH_MS);
})();
