package report

// pageTemplate is the page and the bodies of the standard sections. The
// tables have fixed column widths (table-layout: fixed, width 100%) so
// that they fit the window whatever the messages hold: numbers sit in
// narrow right-aligned columns, prose wraps in the message column.
const pageTemplate = `
{{define "page"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
body { font-family: "Liberation Sans", "DejaVu Sans", Arial, sans-serif; margin: 20px 24px; color: #222; background: #fafafa; }
h1 { font-size: 22px; margin: 0 0 6px 0; }
h2 { font-size: 18px; margin: 30px 0 8px 0; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 18px 0 6px 0; }
a { color: #1f5fa8; }
table { border-collapse: collapse; font-size: 13px; background: #fff; }
th, td { border: 1px solid #ddd; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eee; position: sticky; top: 0; z-index: 1; }
table.v, table.r, table.w { width: 100%; table-layout: fixed; }
table.v td, table.r td, table.w td { overflow-wrap: anywhere; }
col.c-st { width: 88px; } col.c-board { width: 86px; } col.c-case { width: 18%; }
col.c-num { width: 104px; } col.c-band { width: 112px; } col.c-off { width: 66px; } col.c-src { width: 13%; }
col.c-metric { width: 26%; } col.c-n { width: 80px; } col.c-verd { width: 170px; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.val code, td.case code { font-size: 12px; }
td.case .p { display: inline-block; font-size: 11px; color: #555; background: #f2f2f2; border-radius: 3px; padding: 0 3px; margin: 1px 0; }
.sub { font-size: 11px; color: #666; margin-top: 2px; }
.none { color: #999; }
td.msg { font-size: 12px; color: #333; }
td.src { font-size: 11px; color: #555; }
td.off { color: #c62828; }
.badge { display: inline-block; padding: 2px 10px; border-radius: 10px; color: #fff; font-weight: bold; font-size: 15px; vertical-align: middle; }
.st-pass { color: #1a7f37; font-weight: bold; } .st-fail { color: #c62828; font-weight: bold; }
.st-error { color: #b26a00; font-weight: bold; } .st-skip { color: #777; }
.b-passed { background: #1a7f37; } .b-failed { background: #c62828; } .b-other { background: #b26a00; }
table.meta { background: none; font-size: 13px; } .meta td { border: none; padding: 1px 12px 1px 0; }
.toc { font-size: 14px; line-height: 1.7; }
.figs { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 14px; }
figure.fig { background: #fff; border: 1px solid #ddd; padding: 8px 10px; margin: 0; min-width: 0; }
figure.fig h4 { font-size: 14px; margin: 2px 0 6px 0; }
figure.fig img { width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: #555; margin-top: 4px; }
.worse { color: #c62828; font-weight: bold; } .better { color: #1a7f37; }
.note { background: #fff8e1; border: 1px solid #f0d98c; padding: 6px 10px; margin: 6px 0; font-size: 13px; }
.cap { font-size: 12px; color: #555; }
details summary { cursor: pointer; margin: 8px 0; }
details.more summary { margin: 2px 0; color: #1f5fa8; font-size: 11px; }
tr.bad td:first-child { border-left: 3px solid #c62828; }
</style>
</head>
<body>
<h1>{{.Title}}
{{if eq .Run.Status "passed"}}<span class="badge b-passed">passed</span>{{else if eq .Run.Status "failed"}}<span class="badge b-failed">failed</span>{{else}}<span class="badge b-other">{{.Run.Status}}</span>{{end}}
</h1>
<table class="meta">
<tr><td>Lab</td><td>{{.Run.Lab}} ({{.Run.LabFile}})</td></tr>
<tr><td>Plans</td><td>{{join .Run.Plans}}</td></tr>
<tr><td>Started</td><td>{{time .Run.Start}}{{if .Duration}}, took {{.Duration}}{{end}}</td></tr>
<tr><td>Host, seed</td><td>{{.Run.Host}}, {{.Run.Seed}}</td></tr>
{{if .Run.Faults}}<tr><td>Injected faults</td><td>{{join .Run.Faults}}</td></tr>{{end}}
<tr><td>Verdicts</td><td>{{.Summary.Total}} test cases: <span class="st-pass">{{.Summary.Pass}} passed</span>, <span class="st-fail">{{.Summary.Fail}} failed</span>, <span class="st-error">{{.Summary.Error}} errors</span>, <span class="st-skip">{{.Summary.Skip}} skipped</span></td></tr>
<tr><td>Exit code</td><td>{{.Run.ExitCode}}</td></tr>
</table>
{{range .Notes}}<div class="note">{{.}}</div>{{end}}
<nav class="toc">{{range $i, $s := .Sections}}{{if $i}} · {{end}}<a href="#{{$s.ID}}">{{$s.Title}}</a>{{end}}</nav>
{{range .Sections}}
<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{.Body}}
</section>
{{end}}
<p class="cap">Report generated {{.Generated}} by labrunner{{range $k, $v := .Run.Versions}} · {{$k}} {{$v}}{{end}}. <span id="plotcheck"></span></p>
<script>
// Tells scripts/check-report.sh (and a reader) that every plot decoded and
// that the page fits the window: data-plots="OK/TOTAL" and data-layout
// ("ok", or what sticks out) on <body>.
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), ok = 0;
  for (var i = 0; i < imgs.length; i++) { if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++; }
  document.body.setAttribute('data-plots', ok + '/' + imgs.length);
  document.getElementById('plotcheck').textContent = ok + ' of ' + imgs.length + ' plots rendered.';
  var w = document.documentElement.clientWidth, bad = [];
  if (document.documentElement.scrollWidth > w) bad.push('page ' + document.documentElement.scrollWidth + 'px wide in a ' + w + 'px window');
  var tables = document.querySelectorAll('table');
  for (var t = 0; t < tables.length; t++) {
    var r = tables[t].getBoundingClientRect();
    if (r.width > 0 && r.right > w + 1) bad.push('table ' + t + ' ends at ' + Math.round(r.right) + 'px');
  }
  var nums = document.querySelectorAll('td.num');
  for (var n = 0; n < nums.length; n++) {
    if (nums[n].scrollWidth > nums[n].clientWidth + 1) bad.push('number cell "' + nums[n].textContent.trim().slice(0, 40) + '" overflows');
  }
  document.body.setAttribute('data-layout', bad.length ? bad.slice(0, 5).join('; ') : 'ok');
});
</script>
</body>
</html>
{{end}}

{{define "vtable"}}<table class="v">
<colgroup><col class="c-st"><col class="c-board"><col class="c-case"><col class="c-num"><col class="c-num"><col class="c-band"><col class="c-off">{{if .Msg}}<col class="c-msg">{{end}}<col class="c-src"></colgroup>
<thead><tr><th>Status</th><th>Board</th><th>Test case</th><th class="num">Measured</th><th class="num">Expected</th><th>Band</th><th class="num">Off by</th>{{if .Msg}}<th>Message</th>{{end}}<th>Paper section</th></tr></thead>
<tbody>
{{range .Rows}}<tr{{if ne .Status "pass"}} class="bad"{{end}}>
<td class="{{statusClass .Status}}">{{upper .Status}}{{if .Class}} <div class="sub">{{.Class}}</div>{{end}}</td>
<td>{{.Board}}</td>
<td class="case"{{if .MetricTitle}} title="{{.MetricTitle}}"{{end}}>{{.Test}}{{range .Params}} <span class="p">{{.}}</span>{{end}}</td>
{{if .MeasuredCode}}<td class="val" title="{{.MeasuredFull}}"><code>{{.Measured}}</code></td>{{else}}<td class="num"{{if .MeasuredFull}} title="{{.MeasuredFull}}"{{end}}>{{if .Measured}}{{.Measured}}{{else}}<span class="none">—</span>{{end}}</td>{{end}}
{{if .ExpectedCode}}<td class="val" title="{{.ExpectedFull}}"><code>{{.Expected}}</code></td>{{else}}<td class="num"{{if .ExpectedFull}} title="{{.ExpectedFull}}"{{end}}>{{.Expected}}</td>{{end}}
<td class="band"{{if .Budget}} title="band: {{.Budget}}"{{end}}>{{.Band}}{{if .Wide}}<div class="sub">wide: {{.Wide}}</div>{{end}}</td>
<td class="num off">{{.Off}}</td>
{{if $.Msg}}<td class="msg">{{.Message}}{{if .MessageMore}} <details class="more"><summary>… {{len .MessageMore}} more characters</summary>{{.MessageMore}}</details>{{end}}{{if .Budget}}<div class="sub">band: {{.Budget}}</div>{{end}}</td>{{end}}
<td class="src"{{if .Source}} title="{{.Source}}"{{end}}>{{.Cite}}</td>
</tr>
{{end}}</tbody>
</table>{{end}}

{{define "failures"}}{{if not .}}<p>Every verdict passed.</p>{{end}}
{{range .}}<h3 id="{{.ID}}">{{.Title}}: {{if .Summary.Fail}}<span class="st-fail">{{.Summary.Fail}} failed</span>{{end}}{{if .Summary.Error}}{{if .Summary.Fail}}, {{end}}<span class="st-error">{{.Summary.Error}} errors</span>{{end}}{{if .Summary.Skip}}{{if or .Summary.Fail .Summary.Error}}, {{end}}<span class="st-skip">{{.Summary.Skip}} skipped</span>{{end}}</h3>
{{template "vtable" (rows .Rows true)}}
{{end}}{{end}}

{{define "passed"}}<details><summary>Show the {{.N}} passed test cases</summary>
{{range .Groups}}<h3 id="{{.ID}}">{{.Title}}: {{.Summary.Pass}} passed</h3>
{{template "vtable" (rows .Rows false)}}
{{end}}</details>{{end}}

{{define "compare"}}
{{if .Baselines}}<p>Compared with {{join .Baselines}} ({{.C.Compared}} metrics in both runs).</p>{{end}}
{{if .C.NoBaseline}}<p>No earlier run for plans {{join .C.NoBaseline}}.</p>{{end}}
{{if .C.OnlyBefore}}<p class="note">Plans in the earlier run but not in this one: {{join .C.OnlyBefore}}.</p>{{end}}
{{if .Moved}}<h3>Metrics that moved beyond their threshold ({{len .Moved}}: {{.C.Directions}})</h3>
<table class="w">
<colgroup><col class="c-board"><col class="c-board"><col class="c-case"><col><col class="c-num"><col class="c-num"><col class="c-off"><col class="c-off"><col class="c-off"></colgroup>
<thead><tr><th>Plan</th><th>Board</th><th>Test case</th><th>Metric</th><th class="num">Before</th><th class="num">Now</th><th class="num">Change</th><th class="num">Threshold</th><th></th></tr></thead>
<tbody>{{range .Moved}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{.Metric}}</td><td class="num">{{.A}}</td><td class="num">{{.B}}</td><td class="num {{.Better}}">{{.Rel}}</td><td class="num">{{.Threshold}}</td><td class="{{.Better}}">{{.Better}}</td></tr>
{{end}}</tbody></table>
{{else if .Baselines}}<p>No metric moved beyond its threshold.</p>{{end}}
{{if .C.NewFails}}<h3>New failures ({{len .C.NewFails}})</h3>
<table class="w">
<colgroup><col class="c-board"><col class="c-board"><col class="c-case"><col class="c-st"><col class="c-st"><col class="c-num"><col class="c-num"><col></colgroup>
<thead><tr><th>Plan</th><th>Board</th><th>Test case</th><th>Was</th><th>Now</th><th>Measured</th><th>Expected</th><th>Message</th></tr></thead>
<tbody>{{range .C.NewFails}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{if .Was}}{{.Was}}{{else}}(new){{end}}</td><td class="{{statusClass (printf "%s" .Now)}}">{{.Now}}</td><td class="val">{{.Measured}}</td><td class="val">{{.Expected}}</td><td class="msg">{{.Message}}</td></tr>
{{end}}</tbody></table>{{end}}
{{if .C.Fixed}}<h3>Fixed ({{len .C.Fixed}})</h3>
<table class="w">
<colgroup><col class="c-board"><col class="c-board"><col><col class="c-st"><col class="c-st"></colgroup>
<thead><tr><th>Plan</th><th>Board</th><th>Test case</th><th>Was</th><th>Now</th></tr></thead>
<tbody>{{range .C.Fixed}}<tr><td>{{.Plan}}</td><td>{{.Board}}</td><td>{{.Name}}</td><td>{{.Was}}</td><td class="st-pass">{{.Now}}</td></tr>
{{end}}</tbody></table>{{end}}
{{end}}

{{define "plan"}}<p>{{if .Designs}}Design {{.Designs}}. {{end}}{{.Summary.Total}} test cases: <span class="st-pass">{{.Summary.Pass}} passed</span>{{if .Summary.Fail}}, <span class="st-fail">{{.Summary.Fail}} failed</span>{{end}}{{if .Summary.Error}}, <span class="st-error">{{.Summary.Error}} errors</span>{{end}}{{if .Summary.Skip}}, <span class="st-skip">{{.Summary.Skip}} skipped</span>{{end}}{{if .FailuresID}} (<a href="#{{.FailuresID}}">see them</a>){{end}}.</p>
{{if .NoDesc}}<p class="note">No figures: the design{{if .Designs}} ({{.Designs}}){{end}} describes none (a report: block in its catalogue manifest names them).</p>{{end}}
{{if .Figures}}<div class="figs">
{{range .Figures}}<figure class="fig"><h4>{{.Title}}</h4><img class="plot" alt="{{.Title}}" src="{{.Src}}">{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}</div>{{end}}
{{if .Flat}}<p class="cap">Not plotted, every reading the same: {{range $i, $f := .Flat}}{{if $i}}; {{end}}{{$f}}{{end}}.</p>{{end}}
{{if .Missing}}<p class="cap">No readings in this run for: {{range $i, $m := .Missing}}{{if $i}}; {{end}}{{$m}}{{end}}.</p>{{end}}
{{if .Readings}}<details><summary>Other readings: {{len .Readings}} metrics, one line each{{if .Zero}} ({{.Zero}} all zero){{end}}</summary>
<table class="r">
<colgroup><col class="c-metric"><col class="c-n"><col><col class="c-verd"></colgroup>
<thead><tr><th>Metric</th><th class="num">Readings</th><th>Values</th><th>Verdicts</th></tr></thead>
<tbody>{{range .Readings}}<tr{{if .Bad}} class="bad"{{end}}><td>{{.Title}}{{if ne .Title .Metric}}<div class="sub"><code>{{.Metric}}</code></div>{{end}}</td><td class="num">{{.Readings}}</td><td>{{.Values}}</td><td{{if .Bad}} class="st-fail"{{end}}>{{.Verdicts}}</td></tr>
{{end}}</tbody></table></details>{{end}}
{{end}}

{{define "bitstreams"}}<table class="w">
<colgroup><col class="c-board"><col class="c-board"><col class="c-board"><col class="c-board"><col class="c-st"><col class="c-verd"><col></colgroup>
<thead><tr><th>Board</th><th>Kind</th><th>Plan</th><th>Design</th><th>Version</th><th>Part</th><th>sha256</th></tr></thead>
<tbody>{{range .}}<tr><td>{{.Board}}</td><td>{{.Kind}}</td><td>{{.Plan}}</td><td>{{.Design}}</td><td>{{.Version}}</td><td>{{.Part}}</td><td><code>{{.SHA256}}</code></td></tr>
{{end}}</tbody></table>{{end}}
`
