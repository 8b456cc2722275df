package report

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// testLines are two CDF-like lines with a 1000× spread.
func testLines() []line {
	return []line{
		{label: "all", xy: plotter.XYs{{X: 0, Y: 0}, {X: 2, Y: 0.5}, {X: 2000, Y: 1}}, emphasis: true},
		{label: "chat", xy: plotter.XYs{{X: 1, Y: 0}, {X: 3, Y: 0.5}, {X: 40, Y: 1}}},
	}
}

// TestChartRendering renders one chart to SVG and PNG twice: the bytes are identical, the SVG
// is a well-formed element carrying the legend labels, and the PNG has the report size.
func TestChartRendering(t *testing.T) {
	render := func() ([]byte, []byte) {
		p := newPlot("TTFT <CDF>", "ms", "P")
		lines := testLines()
		if !useLogX(p, lines) {
			t.Fatal("a 2000x spread should use a log axis")
		}
		if len(lines[0].xy) != 2 {
			t.Fatalf("the point at 0 should be dropped on a log axis, got %v", lines[0].xy)
		}
		labels, err := addLines(p, lines)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(labels, ",") != "all,chat" {
			t.Fatalf("labels %v", labels)
		}
		svg, err := chartSVG(p, chartWidth, chartHeight)
		if err != nil {
			t.Fatal(err)
		}
		img, err := chartPNG(p, chartWidth, chartHeight)
		if err != nil {
			t.Fatal(err)
		}
		return svg, img
	}
	svg1, png1 := render()
	svg2, png2 := render()
	if !bytes.Equal(svg1, svg2) || !bytes.Equal(png1, png2) {
		t.Fatal("two renders of the same chart differ")
	}
	if !bytes.HasPrefix(svg1, []byte("<svg")) {
		t.Fatalf("SVG does not start at the element: %.40q", svg1)
	}
	for _, want := range []string{">all</text>", ">chat</text>", "TTFT &lt;CDF&gt;"} {
		if !bytes.Contains(svg1, []byte(want)) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	wellFormed(t, svg1)
	img, err := png.Decode(bytes.NewReader(png1))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != pngWidthPx || b.Dy() != pngHeightPx {
		t.Fatalf("PNG is %dx%d, want %dx%d", b.Dx(), b.Dy(), pngWidthPx, pngHeightPx)
	}
}

// TestNoLogForNarrowSpread keeps a linear axis when values span less than logSpread.
func TestNoLogForNarrowSpread(t *testing.T) {
	p := newPlot("t", "x", "y")
	if useLogX(p, []line{{label: "a", xy: plotter.XYs{{X: 10, Y: 0}, {X: 400, Y: 1}}}}) {
		t.Fatal("a 40x spread should stay linear")
	}
}

// wellFormed fails the test when b does not parse as strict XML.
func wellFormed(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	dec.Strict = true
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
}

// TestNum formats table numbers.
func TestNum(t *testing.T) {
	for v, want := range map[float64]string{3: "3", 123.456: "123.5", 1.23456: "1.235", 0.123456: "0.1235", 1.5e7: "15000000", 12345678.9: "1.235e+07", 0.0001234: "0.0001234"} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
