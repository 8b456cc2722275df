package report

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// page builds one self-contained HTML document: inline CSS, charts as inline SVG, no scripts
// and no external references, so a report opens offline and anywhere. The markup is also
// well-formed XML (every element closed, only numeric character references), which lets tests
// and tools parse it strictly. The first error sticks and is returned by finish.
type page struct {
	b   bytes.Buffer
	err error
}

// pageCSS is the report's style sheet (it must not contain '<' or '&', to stay valid XML).
// Chart text names Liberation Sans, whose metrics gonum used to lay it out; Arial has the
// same metrics, so it is the fallback where Liberation is not installed.
const pageCSS = `
body { font-family: "Liberation Sans", Arial, Helvetica, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.25em; margin-top: 1.8em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h3 { font-size: 1.05em; margin-top: 1.2em; }
p.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: 0.6em 0; font-size: 0.92em; }
th, td { border: 1px solid #d4d4d4; padding: 0.25em 0.6em; text-align: right; }
th { background: #f2f2f2; }
td:first-child, th:first-child { text-align: left; }
#evaluations-table td, #evaluations-table th { text-align: left; }
tr.significant td { background: #fff4d6; }
figure.chart { margin: 1.2em 0; }
figure.chart svg { max-width: 100%; height: auto; }
figure.chart svg text { font-family: "Liberation Sans", Arial, Helvetica, sans-serif !important; }
figcaption { color: #555; font-size: 0.9em; }
div.missing { background: #fdf1f1; border: 1px solid #e5b4b4; padding: 0.4em 1em; }
pre { background: #f7f7f7; border: 1px solid #ddd; padding: 0.8em; white-space: pre-wrap; font-size: 0.88em; }
`

// newPage starts a document titled title, with an h1 of the same text.
func newPage(title string) *page {
	p := &page{}
	p.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n")
	p.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n")
	p.raw("<title>" + esc(title) + "</title>\n<style>" + pageCSS + "</style>\n</head>\n<body>\n")
	p.raw("<h1>" + esc(title) + "</h1>\n")
	return p
}

// esc escapes text for HTML content and attribute values (numeric references only, valid in
// XML too).
func esc(s string) string { return html.EscapeString(s) }

// raw appends markup as is.
func (p *page) raw(s string) { p.b.WriteString(s) }

// heading appends an h2 (level 2) or h3 (level 3) with an id for links.
func (p *page) heading(level int, id, text string) {
	attr := ""
	if id != "" {
		attr = ` id="` + esc(id) + `"`
	}
	p.raw(fmt.Sprintf("<h%d%s>%s</h%d>\n", level, attr, esc(text), level))
}

// para appends a paragraph of text with an optional class.
func (p *page) para(class, text string) {
	attr := ""
	if class != "" {
		attr = ` class="` + esc(class) + `"`
	}
	p.raw("<p" + attr + ">" + esc(text) + "</p>\n")
}

// list appends a bulleted list inside a div of the given class (for example "missing").
func (p *page) list(class string, items []string) {
	if len(items) == 0 {
		return
	}
	p.raw(`<div class="` + esc(class) + `"><ul>` + "\n")
	for _, it := range items {
		p.raw("<li>" + esc(it) + "</li>\n")
	}
	p.raw("</ul></div>\n")
}

// table appends a table with a header row; rowClass, when not nil, gives each row a class
// ("" for none).
func (p *page) table(id string, header []string, rows [][]string, rowClass func(i int) string) {
	p.raw(`<table id="` + esc(id) + `">` + "\n<thead><tr>")
	for _, h := range header {
		p.raw("<th>" + esc(h) + "</th>")
	}
	p.raw("</tr></thead>\n<tbody>\n")
	for i, r := range rows {
		cls := ""
		if rowClass != nil {
			if c := rowClass(i); c != "" {
				cls = ` class="` + esc(c) + `"`
			}
		}
		p.raw("<tr" + cls + ">")
		for _, c := range r {
			p.raw("<td>" + esc(c) + "</td>")
		}
		p.raw("</tr>\n")
	}
	p.raw("</tbody>\n</table>\n")
}

// pre appends preformatted, escaped text.
func (p *page) pre(id, text string) {
	p.raw(`<pre id="` + esc(id) + `">` + esc(text) + "</pre>\n")
}

// figure appends a chart as <figure class="chart" id="ID" data-series="a|b"> holding the
// inline SVG and the caption.
func (p *page) figure(c chart) {
	if p.err != nil {
		return
	}
	svg, err := chartSVG(c.plot, chartWidth, chartHeight)
	if err != nil {
		p.err = fmt.Errorf("chart %s: %w", c.id, err)
		return
	}
	p.raw(`<figure class="chart" id="` + esc(c.id) + `" data-series="` + esc(strings.Join(c.labels, "|")) + `">` + "\n")
	p.b.Write(svg)
	if c.caption != "" {
		p.raw("<figcaption>" + esc(c.caption) + "</figcaption>\n")
	}
	p.raw("</figure>\n")
}

// finish closes the document and writes it to w.
func (p *page) finish(w io.Writer) error {
	if p.err != nil {
		return p.err
	}
	p.raw("</body>\n</html>\n")
	_, err := w.Write(p.b.Bytes())
	return err
}

// num formats a number for a table: integers as integers, otherwise four significant digits
// without an exponent for everyday magnitudes.
func num(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case math.Abs(v) >= 1e6 || math.Abs(v) < 1e-3:
		return strconv.FormatFloat(v, 'g', 4, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case math.Abs(v) >= 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	default:
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
}
