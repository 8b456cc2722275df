package report

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Chart geometry: every chart is chartWidth × chartHeight, which is pngWidthPx × pngHeightPx
// in a PNG at pngDPI. One size keeps the HTML layout and the PNG files alike.
const (
	chartWidth  = 7.5 * vg.Inch
	chartHeight = 4 * vg.Inch
	pngDPI      = 96
	pngWidthPx  = 720
	pngHeightPx = 384
)

// chart is one figure: a gonum plot, the id that names its HTML element and its PNG file
// (ttft-cdf → <figure id="ttft-cdf"> and ttft-cdf.png) and a caption.
type chart struct {
	// id is the figure's element id and the base name of its PNG file.
	id string
	// caption says what the chart shows and what it leaves out.
	caption string
	// labels are the series labels drawn in the legend, in order (kept for tests and for the
	// figure's data attribute).
	labels []string
	// plot is the chart itself.
	plot *plot.Plot
}

// sansFont is the typeface of every chart text (the Liberation fonts gonum embeds, so a PNG
// renders the same on every machine).
var sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// newPlot returns a plot with the report's look: sans-serif text, a title, axis labels and a
// light grid. chartSVG and chartPNG draw its legend beside the plot when it fits.
func newPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansFont, 13)
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansFont, 11)
		ax.Tick.Label.Font = font.From(sansFont, 9)
		ax.Padding = vg.Points(2)
	}
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Legend.TextStyle.Font = font.From(sansFont, 9)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(8)
	p.Legend.YOffs = vg.Points(-4)
	p.Legend.ThumbnailWidth = vg.Points(18)
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 215}
	grid.Horizontal.Color = color.Gray{Y: 215}
	p.Add(grid)
	return p
}

// palette are the line colours, in order (a colour-blind-friendly set); lineColor cycles them.
var palette = []color.RGBA{
	{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
	{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff},
	{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// lineColor is the i-th palette colour (cycling).
func lineColor(i int) color.Color { return palette[i%len(palette)] }

// line is one series of a line chart.
type line struct {
	// label is the legend entry.
	label string
	// xy are the points, in increasing x.
	xy plotter.XYs
	// emphasis draws the line black, thicker and dashed (the "all" or mean line).
	emphasis bool
	// color, when > 0, is 1 + the palette index to use, so that a series keeps its colour
	// across charts whatever lines precede it (one colour per evaluation in a comparison).
	color int
}

// addLines draws the lines on p, colouring the non-emphasised ones in palette order, and
// returns their labels. A line without points is skipped.
func addLines(p *plot.Plot, lines []line) ([]string, error) {
	var labels []string
	n := 0
	for _, l := range lines {
		if len(l.xy) == 0 {
			continue
		}
		pl, err := plotter.NewLine(l.xy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", l.label, err)
		}
		if l.emphasis {
			pl.Color = color.Black
			pl.Width = vg.Points(2)
			pl.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		} else {
			pl.Color = lineColor(n)
			if l.color > 0 {
				pl.Color = lineColor(l.color - 1)
			}
			pl.Width = vg.Points(1.4)
			n++
		}
		p.Add(pl)
		p.Legend.Add(l.label, pl)
		labels = append(labels, l.label)
	}
	return labels, nil
}

// useLogX switches p's x axis to a log scale when the positive x values of the lines span
// more than logSpread (a factor), so a long tail does not squash the body of a latency CDF. It
// reports whether it did. Log scales cannot show values <= 0: such points are dropped from the
// lines first, which is why it takes the lines before addLines draws them.
func useLogX(p *plot.Plot, lines []line) bool {
	lo, hi := math.Inf(1), 0.0
	for _, l := range lines {
		for _, pt := range l.xy {
			if pt.X > 0 {
				lo = math.Min(lo, pt.X)
				hi = math.Max(hi, pt.X)
			}
		}
	}
	if hi == 0 || hi/lo <= logSpread {
		return false
	}
	for i := range lines {
		kept := lines[i].xy[:0:0]
		for _, pt := range lines[i].xy {
			if pt.X > 0 {
				kept = append(kept, pt)
			}
		}
		lines[i].xy = kept
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	return true
}

// logSpread is the max/min ratio above which a latency axis becomes logarithmic.
const logSpread = 50

// svgStart marks where gonum's SVG prolog (XML declaration and generator comment) ends: an
// inline <svg> in HTML must start at the element.
var svgStart = []byte("<svg")

// chartSVG renders p as an SVG element of w × h points, without the XML prolog so that it can
// be inlined into HTML. gonum's SVG writer uses no timestamps or random ids and no embedded
// fonts (text names the Liberation family), so equal plots give equal bytes.
func chartSVG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgsvg.New(w, h)
	drawPlot(draw.New(c), p)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	out := buf.Bytes()
	i := bytes.Index(out, svgStart)
	if i < 0 {
		return nil, errors.New("the SVG writer produced no <svg> element")
	}
	return out[i:], nil
}

// legendGap separates the plot from a legend drawn beside it.
const legendGap = 10 * vg.Millimeter

// maxLegendShare is the largest share of the chart width a legend beside the plot may take;
// a wider legend (long names) is drawn inside the plot as gonum does by default.
const maxLegendShare = 0.35

// drawPlot draws p on dc with its legend in a column to the right of the plot, so that the
// legend never hides data (gonum draws it over the data area). The legend keeps its entries
// and text style; its position fields are replaced.
func drawPlot(dc draw.Canvas, p *plot.Plot) {
	leg := p.Legend
	w := leg.Rectangle(dc).Size().X
	full := dc.Size().X
	if w == 0 || w+legendGap > vg.Length(maxLegendShare)*full {
		p.Draw(dc)
		return
	}
	bare := *p
	bare.Legend = plot.NewLegend()
	bare.Draw(draw.Crop(dc, 0, -(w + legendGap), 0, 0))
	top := vg.Length(0)
	if p.Title.Text != "" {
		top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = 0, 0
	leg.Draw(draw.Crop(dc, full-w-legendGap/2, 0, 0, -top))
}

// chartPNG renders p as a PNG of w × h points at pngDPI on a white background.
func chartPNG(p *plot.Plot, w, h vg.Length) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI), vgimg.UseBackgroundColor(color.White))
	drawPlot(draw.New(c), p)
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
