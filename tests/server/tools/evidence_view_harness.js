// Runs the evidence view's script in node with a stand-in DOM and host; stdin: {script, ids, result, arguments};
// stdout: the messages the view posted, when, and the DOM it built.
const vm = require("vm");
const fs = require("fs");
const input = JSON.parse(fs.readFileSync(0, "utf-8"));
const posted = [];
let listener = null;
class Element {
  constructor(tag) { this.tagName = tag; this.children = []; this.attributes = {}; this.style = {}; this.className = ""; this.text = ""; }
  appendChild(child) { this.children.push(child); return child; }
  replaceChildren(...children) { this.children = children; }
  setAttribute(key, value) { this.attributes[key] = String(value); }
  get textContent() { return this.text; }
  set textContent(value) { this.text = String(value); this.children = []; }
}
const ids = {};
for (const id of input.ids) ids[id] = new Element("div");
const parent = { postMessage(message, origin) { posted.push({ message: JSON.parse(JSON.stringify(message)), origin }); } };
const stranger = {};
const window = { parent, addEventListener(type, fn) { if (type === "message") listener = fn; } };
const document = {
  getElementById: (id) => ids[id] || null,
  createElement: (tag) => new Element(tag),
  documentElement: { scrollWidth: 800, scrollHeight: 640 },
};
vm.runInNewContext(input.script, { window, document, Object, Math, JSON, String });
const steps = [];
function mark(label) { steps.push({ label, posted: posted.length }); }
mark("loaded");
const init = posted[0] && posted[0].message;
listener({ source: stranger, data: { jsonrpc: "2.0", id: init.id, result: {} } });  // not the host: ignored
mark("stranger");
listener({ source: parent, data: { jsonrpc: "2.0", id: init.id, result: {
  protocolVersion: "2026-01-26", hostInfo: { name: "test host", version: "1" }, hostCapabilities: {}, hostContext: {} } } });
mark("initialized");
listener({ source: parent, data: { jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: input.arguments } } });
const waiting = ids.status.textContent;
listener({ source: parent, data: { jsonrpc: "2.0", method: "ui/notifications/tool-result", params: input.result } });
mark("shown");
listener({ source: parent, data: { jsonrpc: "2.0", id: 99, method: "ui/resource-teardown", params: {} } });
function dump(node) {
  return { tag: node.tagName, className: node.className, attributes: node.attributes, style: node.style, text: node.text,
           children: node.children.map(dump) };
}
const dom = {};
for (const id of input.ids) dom[id] = dump(ids[id]);
console.log(JSON.stringify({ posted, steps, waiting, dom }));
