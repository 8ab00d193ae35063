"""The report page's inline assets: its style sheet and the script of the drill-down (expand,
collapse, filter, and opening ``report.html#q-<sample id>``'s question). Inline, so the page makes
no request when it is viewed."""

#: The page's style sheet.
CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;
max-width:1200px;padding:16px 24px;color:#1d1d1f}
h1{font-size:22px;margin:4px 0}
h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
dl.facts{display:flex;flex-wrap:wrap;gap:4px 18px;margin:4px 0;color:#555}
dl.facts dt{font-weight:600}dl.facts dd{margin:0 0 0 4px}dl.facts dt:after{content:":"}
dl.facts div{display:flex}table{border-collapse:collapse;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f6}td.num{text-align:right;font-variant-numeric:tabular-nums}
.wide{overflow-x:auto}
table.summary td:first-child,table.summary td.ci,table.pairwise .ci{white-space:nowrap}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:5px;
vertical-align:baseline}
.note{color:#666;font-size:13px}.na{color:#999}.fail{color:#b00020}.score{font-weight:600}
ul.winners li{margin:3px 0}details.messages .role{font-weight:600;font-size:12px;color:#555}
p.cut{font-size:13px}ul.tool-calls{margin:2px 0 6px;padding-left:18px;font-size:13px}
ul.tool-calls code{white-space:pre-wrap;word-break:break-all}
.incomplete{border:2px solid #c62828;background:#fdecea;padding:4px 12px;border-radius:4px}
.nowin{color:#555}table.pairwise td.sig{font-weight:700;background:#eef6ee}
table.pairwise .ci,table.pairwise .p{font-size:11px;color:#555}
figure{display:inline-block;margin:6px 12px 6px 0}figure img{max-width:100%;border:1px solid #eee}
figcaption{color:#666;font-size:12px}
details.question{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:4px 10px;
background:#fff}
details.question>summary{cursor:pointer;display:flex;flex-wrap:wrap;gap:6px;align-items:baseline}
details.question>summary .qtext{font-weight:600;margin-right:8px}
.badge{border:1px solid;border-radius:10px;padding:0 7px;font-size:12px;white-space:nowrap}
details.answer{border-left:4px solid #ccc;margin:8px 0 8px 6px;padding:2px 10px;background:#fafafa}
details.answer>summary{cursor:pointer;font-weight:600}
details.answer .sc,details.answer .cost,details.answer .rule{font-weight:400;margin-left:10px;
color:#444}
pre{white-space:pre-wrap;word-break:break-word;background:#f4f4f6;padding:6px 8px;border-radius:4px;
margin:4px 0;font-size:12.5px}
blockquote.snippet{margin:2px 0 6px 0;padding:2px 8px;border-left:3px solid #ddd;color:#333;
white-space:pre-wrap;font-size:12.5px}
.evidence .title{font-weight:600}.meta{color:#777;font-size:12px}
.step{border:1px solid #e4e4e8;border-radius:4px;margin:6px 0;padding:4px 8px;background:#fff}
.step .node{font-family:ui-monospace,Menlo,monospace;font-size:12px;color:#fff;background:#555;
display:inline-block;padding:0 6px;border-radius:3px}
.what{font-weight:600;margin:4px 0 2px}.route{background:#fff4d6;padding:3px 6px;border-radius:3px}
.follow{font-style:italic}.sub{color:#0b5}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:1px 10px;margin:4px 0;font-size:12px;
color:#555}
dl.kv dd{margin:0}dl.kv pre{margin:0}table.memory pre{margin:0;max-height:12em;overflow:auto}
.tools{margin:6px 0}.tools input{padding:3px 6px;width:280px;margin-right:8px}.hidden{display:none}
"""

#: The drill-down's script (run once the page is parsed; sets ``data-ready`` on the body when done).
SCRIPT = """<script>
(function () {
  "use strict";
  var questions = Array.prototype.slice.call(document.querySelectorAll("details.question"));
  function openQuestion(el) {
    el.open = true;
    Array.prototype.forEach.call(el.querySelectorAll("details.answer"), function (d) {
      d.open = true;
    });
  }
  function fromHash() {
    var id = decodeURIComponent((window.location.hash || "").slice(1));
    var el = id ? document.getElementById(id) : null;
    if (el && el.classList.contains("question")) { openQuestion(el); el.scrollIntoView(); }
  }
  document.getElementById("expand").addEventListener("click", function () {
    questions.forEach(openQuestion);
  });
  document.getElementById("collapse").addEventListener("click", function () {
    var all = document.querySelectorAll("details.question, details.answer");
    Array.prototype.forEach.call(all, function (d) { d.open = false; });
  });
  document.getElementById("filter").addEventListener("input", function (ev) {
    var needle = ev.target.value.toLowerCase();
    questions.forEach(function (q) {
      var found = q.textContent.toLowerCase().indexOf(needle) >= 0;
      q.classList.toggle("hidden", needle !== "" && !found);
    });
  });
  window.addEventListener("hashchange", fromHash);
  fromHash();
  document.body.setAttribute("data-ready", "1");
})();
</script>"""
