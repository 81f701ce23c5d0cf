// Silo's web console: reads the broker's JSON API and draws pages from it. Everything the
// broker returns is put into the page as text (text nodes, never markup), so a message body
// or a topic name cannot become part of the page.
"use strict";

const page = document.getElementById("page");
const statusLine = document.getElementById("status");
let overview = null;
let refreshTimer = null;

// An element with attributes and children; strings and numbers become text nodes.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function table(headers, rows, numeric) {
  const num = new Set(numeric || []);
  return el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h, i) => el("th", { class: num.has(i) ? "num" : null }, h)))),
    el("tbody", {}, rows));
}

function row(attrs, cells, numeric) {
  const num = new Set(numeric || []);
  return el("tr", attrs, cells.map((c, i) => el("td", { class: num.has(i) ? "num" : null }, c)));
}

function time(ms) {
  return ms > 0 ? new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC") : "never";
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n : n.toFixed(1)) + " " + units[i];
}

function link(hash, text) {
  return el("a", { href: hash }, text);
}

function lagCell(lag) {
  return el("span", { class: lag === 0 ? "lag zero" : "lag", "data-lag": lag }, lag);
}

async function api(path, options) {
  // From the origin: a page opened as http://user:password@host/ may not fetch relative URLs.
  const r = await fetch(location.origin + path, Object.assign({ headers: { "x-silo-console": "1" } }, options || {}));
  const body = await r.json().catch(() => ({ error: "the broker answered " + r.status }));
  if (!r.ok) throw new Error(body.error || ("the broker answered " + r.status));
  return body;
}

function show(...children) {
  page.replaceChildren(...children);
}

function failed(e) {
  show(el("p", { class: "error", id: "error" }, e.message));
}

// The rates graph: messages in and out per second over the last minutes, as SVG.
function graph(points) {
  const w = 900, h = 180, pad = 30;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("width", "100%");
  svg.setAttribute("id", "rates");
  const max = Math.max(1, ...points.map(p => Math.max(p.in, p.out)));
  const x = i => pad + (points.length <= 1 ? 0 : (i * (w - 2 * pad)) / (points.length - 1));
  const y = v => h - pad - (v * (h - 2 * pad)) / max;
  const line = (x1, y1, x2, y2, color) => {
    const l = document.createElementNS(ns, "line");
    for (const [k, v] of Object.entries({ x1, y1, x2, y2, stroke: color })) l.setAttribute(k, v);
    svg.append(l);
  };
  const text = (tx, ty, s) => {
    const t = document.createElementNS(ns, "text");
    t.setAttribute("x", tx); t.setAttribute("y", ty); t.setAttribute("font-size", "11"); t.setAttribute("fill", "#667085");
    t.textContent = s;
    svg.append(t);
  };
  line(pad, h - pad, w - pad, h - pad, "#c5cad3");
  line(pad, pad, pad, h - pad, "#c5cad3");
  text(2, pad + 4, String(max));
  text(2, h - pad, "0");
  text(w - pad - 60, h - 8, "now");
  text(pad, h - 8, `${points.length} s ago`);
  for (const [key, color, name] of [["in", "#2f6fde", "rates-in"], ["out", "#d9822b", "rates-out"]]) {
    const pl = document.createElementNS(ns, "polyline");
    pl.setAttribute("points", points.map((p, i) => `${x(i).toFixed(1)},${y(p[key]).toFixed(1)}`).join(" "));
    pl.setAttribute("fill", "none");
    pl.setAttribute("stroke", color);
    pl.setAttribute("stroke-width", "2");
    pl.setAttribute("id", name);
    svg.append(pl);
  }
  return svg;
}

function card(label, value, id) {
  return el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "value", id }, value));
}

async function showOverview() {
  const [o, rates] = await Promise.all([api("/api/overview"), api("/api/rates")]);
  overview = o;
  const last = rates.points.length ? rates.points[rates.points.length - 1] : { in: 0, out: 0 };
  show(
    el("h1", {}, `Cluster ${o.cluster}`),
    el("div", { class: "cards" },
      card("Messages in", o.messagesIn, "messages-in"),
      card("Messages out", o.messagesOut, "messages-out"),
      card("In / s (last second)", last.in, "rate-in"),
      card("Out / s (last second)", last.out, "rate-out"),
      card("Topics", o.topics, "topic-count"),
      card("Consumer groups", o.groups, "group-count"),
      card("Commit log", bytes(Math.max(0, (o.commitLogMaxOffset || 0) - (o.commitLogMinOffset || 0))), "commit-log")),
    el("h2", {}, "Produce and consume rates (messages per second)"),
    el("div", { class: "graph" },
      el("div", { class: "legend" }, el("span", { class: "in" }, "\u25A0 in"), el("span", { class: "out" }, "\u25A0 out")),
      graph(rates.points)),
    el("h2", {}, "Brokers"),
    table(["Cluster", "Broker", "Id", "Address"],
      o.brokers.map(b => row({ "data-broker": b.name }, [b.cluster, b.name, b.id, b.addr]))),
    el("p", { class: "muted" }, `This broker: ${o.brokerName} (${o.addr}), ${o.version}, up since ${time(o.bootTimestamp)}`));
  refreshTimer = setTimeout(route, 2000);
}

async function showTopics() {
  const topics = await api("/api/topics");
  const showSystem = location.hash.includes("system=1");
  const rows = topics.filter(t => showSystem || !t.system).map(t =>
    row({ "data-topic": t.name }, [link("#/topic/" + encodeURIComponent(t.name), t.name),
      t.readQueues, t.writeQueues, el("span", { "data-messages": t.messages }, t.messages), time(t.lastUpdate)], [1, 2, 3]));
  const children = [el("h1", {}, "Topics"),
    el("p", {}, link(showSystem ? "#/topics" : "#/topics?system=1", showSystem ? "Hide system topics" : "Show system topics"))];
  if (overview && overview.writable) {
    const name = el("input", { name: "name", placeholder: "topic name", required: "" });
    const queues = el("input", { name: "queues", placeholder: "queues (8)", size: "10" });
    children.push(el("form", { id: "create-topic", onsubmit: async ev => {
      ev.preventDefault();
      try {
        await api(`/api/topics?name=${encodeURIComponent(name.value)}&queues=${encodeURIComponent(queues.value)}`, { method: "POST" });
        statusLine.textContent = `Topic ${name.value} created.`;
        route();
      } catch (e) { statusLine.textContent = e.message; }
    } }, name, queues, el("button", { type: "submit" }, "Create topic")));
  }
  children.push(table(["Topic", "Read queues", "Write queues", "Messages", "Last stored"], rows, [1, 2, 3]));
  show(...children);
}

async function showTopic(name) {
  const t = await api("/api/topic?name=" + encodeURIComponent(name));
  const children = [el("h1", {}, `Topic ${t.name}`),
    el("p", { class: "muted" }, `${t.readQueues} read / ${t.writeQueues} write queues, perm ${t.perm}${t.order ? ", ordered" : ""}`),
    el("h2", {}, "Queues"),
    table(["Queue", "Min offset", "Max offset", "Last stored"],
      t.queues.map(q => row({ "data-queue": q.queueId }, [q.queueId, q.minOffset, q.maxOffset, time(q.lastUpdate)], [0, 1, 2])), [0, 1, 2]),
    el("h2", {}, "Consumer groups"),
    t.groups.length ? table(["Group", "Lag"],
      t.groups.map(g => row({ "data-group": g.group }, [link("#/group/" + encodeURIComponent(g.group), g.group), lagCell(g.lag)], [1])), [1])
      : el("p", { class: "muted" }, "No group consumes this topic.")];
  if (overview && overview.writable) {
    children.push(el("p", {}, el("button", { class: "danger", id: "delete-topic", onclick: async () => {
      if (!confirm(`Delete topic ${t.name}?`)) return;
      try {
        await api("/api/topic?name=" + encodeURIComponent(t.name), { method: "DELETE" });
        location.hash = "#/topics";
      } catch (e) { statusLine.textContent = e.message; }
    } }, "Delete topic")));
  }
  show(...children);
}

async function showGroups() {
  const groups = await api("/api/groups");
  const showSystem = location.hash.includes("system=1");
  show(el("h1", {}, "Consumer groups"),
    el("p", {}, link(showSystem ? "#/groups" : "#/groups?system=1", showSystem ? "Hide system groups" : "Show system groups")),
    table(["Group", "Topics", "Online clients", "Lag"],
      groups.filter(g => showSystem || !g.system).map(g => row({ "data-group": g.group }, [link("#/group/" + encodeURIComponent(g.group), g.group),
        g.topics.join(", "), g.online, lagCell(g.lag)], [2, 3])), [2, 3]));
}

async function showGroup(name) {
  const g = await api("/api/group?name=" + encodeURIComponent(name));
  show(el("h1", {}, `Consumer group ${g.group}`),
    el("p", {}, "Total lag: ", el("span", { id: "total-lag" }, lagCell(g.lag))),
    el("h2", {}, "Progress per queue"),
    table(["Topic", "Queue", "Broker offset", "Consumer offset", "Lag", "Last consumed"],
      g.queues.map(q => row({ "data-topic": q.topic, "data-queue": q.queueId },
        [q.topic, q.queueId, q.brokerOffset, q.consumerOffset, lagCell(q.lag), time(q.lastConsumed)], [1, 2, 3, 4])), [1, 2, 3, 4]),
    el("h2", {}, "Online clients"),
    g.connections.length ? table(["Client", "Address", "Language", "Version"],
      g.connections.map(c => row({}, [c.clientId, c.addr, c.language, c.version])))
      : el("p", { class: "muted" }, "No client of this group is online."));
}

async function showMessages(params) {
  const topic = el("input", { name: "topic", placeholder: "topic", value: params.get("topic") || "" });
  const key = el("input", { name: "key", placeholder: "key", value: params.get("key") || "" });
  const id = el("input", { name: "id", placeholder: "or message id", size: "34", value: params.get("id") || "" });
  const form = el("form", { id: "find", onsubmit: ev => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const i of [topic, key, id]) if (i.value) q.set(i.name, i.value);
    location.hash = "#/messages?" + q.toString();
  } }, topic, key, id, el("button", { type: "submit" }, "Find"));
  const children = [el("h1", {}, "Messages"), form];
  if (params.get("id") || params.get("key")) {
    const q = new URLSearchParams();
    for (const k of ["topic", "key", "id"]) if (params.get(k)) q.set(k, params.get(k));
    try {
      const found = await api("/api/messages?" + q.toString());
      children.push(el("p", { id: "found-count", "data-count": found.length }, `${found.length} found`));
      for (const m of found) children.push(messageView(m));
    } catch (e) {
      children.push(el("p", { class: "error", id: "error" }, e.message));
    }
  }
  show(...children);
}

function messageView(m) {
  const fields = [["Message id", m.msgId], ["Unique key", m.uniqueKey], ["Topic", m.topic], ["Queue", m.queueId],
    ["Queue offset", m.queueOffset], ["Keys", m.keys], ["Tags", m.tags], ["Born", `${time(m.bornTimestamp)} at ${m.bornHost}`],
    ["Stored", `${time(m.storeTimestamp)} at ${m.storeHost}`], ["Reconsumed", m.reconsumeTimes],
    ["Body", `${m.bodyLength} bytes${m.bodyTruncated ? " (shown in part)" : ""}`]];
  return el("section", { class: "message", "data-msgid": m.msgId },
    el("h2", {}, m.msgId),
    table(["Field", "Value"], fields.filter(f => f[1] !== null && f[1] !== undefined).map(f => row({}, f))),
    el("h2", {}, "Properties"),
    table(["Name", "Value"], Object.entries(m.properties).map(p => row({}, p))),
    el("h2", {}, "Body"),
    el("pre", { class: "body" }, m.body));
}

async function route() {
  clearTimeout(refreshTimer);
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const section = path.split("/")[1] || "overview";
  for (const a of document.querySelectorAll("nav a")) {
    const p = a.dataset.page;
    a.classList.toggle("current", p === section || (p === "topics" && section === "topic") || (p === "groups" && section === "group"));
  }
  try {
    if (!overview) {
      overview = await api("/api/overview");
    }
    document.getElementById("who").textContent = overview.user ? `${overview.user}${overview.writable ? "" : " (read-only)"}` : "read-only";
    const arg = decodeURIComponent(path.split("/").slice(2).join("/"));
    if (section === "overview") await showOverview();
    else if (section === "topics") await showTopics();
    else if (section === "topic") await showTopic(arg);
    else if (section === "groups") await showGroups();
    else if (section === "group") await showGroup(arg);
    else if (section === "messages") await showMessages(params);
    else show(el("p", { class: "error" }, "No such page."));
    statusLine.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    document.body.dataset.ready = "1";
  } catch (e) {
    failed(e);
  }
}

window.addEventListener("hashchange", route);
route();
