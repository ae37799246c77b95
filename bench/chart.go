package main

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"slices"
	"time"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Series is one operator's create-to-Ready latencies, for the chart.
type Series struct {
	Name      string
	Latencies []time.Duration
}

// The chart's size, and where its plot area and legend sit in it.
const (
	chartWidth  = 900
	chartHeight = 540
	legendLeft  = 685
)

// plotArea is the rectangle the curves are drawn in.
var plotArea = image.Rect(70, 60, 660, 480)

// palette holds the Okabe-Ito colours that read well on white (without
// black, kept for text, and yellow); series beyond it reuse it in turn.
var palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x00, 0x9e, 0x73, 0xff}, // bluish green
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
}

// Colours of everything but the curves.
var (
	inkColour  = color.RGBA{0x22, 0x22, 0x22, 0xff}
	axisColour = color.RGBA{0x44, 0x44, 0x44, 0xff}
	gridColour = color.RGBA{0xe0, 0xe0, 0xe0, 0xff}
)

// LatencyChart draws the latency distribution of each series as a PNG: an
// empirical CDF (x: latency in seconds, linear from 0 to the largest latency
// rounded up to a nice step; y: share of CRs Ready, 0-100%), one coloured
// line per series, a legend with each name and its p50/p99, axis ticks and
// labels, and a title given as argument.
func LatencyChart(title string, series []Series) ([]byte, error) {
	sorted := make([][]time.Duration, len(series))
	var largest time.Duration
	found := false
	for i, s := range series {
		sorted[i] = slices.Clone(s.Latencies)
		slices.Sort(sorted[i])
		if len(s.Latencies) > 0 {
			largest, found = max(largest, slices.Max(s.Latencies)), true
		}
	}
	if !found {
		return nil, errors.New("latency chart: no series with latencies")
	}
	c := newCanvas(largest.Seconds())
	c.drawAxes()
	for i, l := range sorted {
		c.drawCurve(l, palette[i%len(palette)])
		c.drawLegendEntry(i, series[i].Name, l, palette[i%len(palette)])
	}
	drawTitle(c.img, title)
	var buf bytes.Buffer
	if err := png.Encode(&buf, c.img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// A canvas is the chart's image with its x scale: step seconds between ticks
// and xmax seconds at the plot's right edge.
type canvas struct {
	img        *image.RGBA
	step, xmax float64
}

// newCanvas is a white chart whose x axis reaches past largest seconds.
func newCanvas(largest float64) *canvas {
	if largest <= 0 {
		largest = 1
	}
	step := niceStep(largest)
	img := image.NewRGBA(image.Rect(0, 0, chartWidth, chartHeight))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	// The small allowance keeps 3.0000001 steps from becoming 4.
	return &canvas{img: img, step: step, xmax: math.Ceil(largest/step-1e-9) * step}
}

// niceStep is a tick step of 1, 2 or 5 times a power of ten that cuts
// 0..top into at most 8 intervals.
func niceStep(top float64) float64 {
	power := math.Pow(10, math.Floor(math.Log10(top/8)))
	for _, m := range []float64{1, 2, 5} {
		if top/(m*power) <= 8 {
			return m * power
		}
	}
	return 10 * power
}

// x is the column of a latency in seconds.
func (c *canvas) x(seconds float64) int {
	return plotArea.Min.X + int(math.Round(seconds/c.xmax*float64(plotArea.Dx())))
}

// y is the row of a share of CRs, 0 to 1.
func (c *canvas) y(share float64) int {
	return plotArea.Max.Y - int(math.Round(share*float64(plotArea.Dy())))
}

// drawAxes draws the grid, the axes, their ticks and their labels.
func (c *canvas) drawAxes() {
	for pct := 0; pct <= 100; pct += 20 {
		y := c.y(float64(pct) / 100)
		fill(c.img, image.Rect(plotArea.Min.X, y, plotArea.Max.X, y+1), gridColour)
		fill(c.img, image.Rect(plotArea.Min.X-5, y, plotArea.Min.X, y+1), axisColour)
		s := fmt.Sprintf("%d%%", pct)
		drawText(c.img, plotArea.Min.X-8-textWidth(s), y+4, s, inkColour)
	}
	decimals := max(0, int(-math.Floor(math.Log10(c.step))))
	for i := 0; float64(i)*c.step <= c.xmax*(1+1e-9); i++ {
		x := c.x(float64(i) * c.step)
		fill(c.img, image.Rect(x, plotArea.Min.Y, x+1, plotArea.Max.Y), gridColour)
		fill(c.img, image.Rect(x, plotArea.Max.Y, x+1, plotArea.Max.Y+5), axisColour)
		s := fmt.Sprintf("%.*f", decimals, float64(i)*c.step)
		drawText(c.img, x-textWidth(s)/2, plotArea.Max.Y+18, s, inkColour)
	}
	fill(c.img, image.Rect(plotArea.Min.X, plotArea.Min.Y, plotArea.Min.X+1, plotArea.Max.Y+1), axisColour)
	fill(c.img, image.Rect(plotArea.Min.X, plotArea.Max.Y, plotArea.Max.X+1, plotArea.Max.Y+1), axisColour)
	xLabel := "latency from create to done (seconds)"
	drawText(c.img, (plotArea.Min.X+plotArea.Max.X-textWidth(xLabel))/2, plotArea.Max.Y+40, xLabel, inkColour)
	drawText(c.img, plotArea.Min.X-40, plotArea.Min.Y-12, "CRs done (% of all)", inkColour)
}

// drawCurve draws the empirical CDF of sorted latencies as a staircase:
// up 1/n at each latency, flat in between.
func (c *canvas) drawCurve(sorted []time.Duration, col color.RGBA) {
	n := float64(len(sorted))
	for i, l := range sorted {
		x, below, above := c.x(l.Seconds()), c.y(float64(i)/n), c.y(float64(i+1)/n)
		if i > 0 {
			thickLine(c.img, c.x(sorted[i-1].Seconds()), below, x, below, col)
		}
		thickLine(c.img, x, below, x, above, col)
	}
}

// drawLegendEntry lists series i right of the plot: a swatch of its colour
// and its name, then its p50 and p99; a series without latencies gets no
// swatch and "(none)".
func (c *canvas) drawLegendEntry(i int, name string, sorted []time.Duration, col color.RGBA) {
	top := plotArea.Min.Y + 10 + 40*i
	if len(sorted) > 0 {
		thickLine(c.img, legendLeft, top-4, legendLeft+20, top-4, col)
	}
	textLeft := legendLeft + 28
	fits := (chartWidth - textLeft - 4) / textWidth("m")
	drawText(c.img, textLeft, top, shorten(name, fits), inkColour)
	stats := "(none)"
	if len(sorted) > 0 {
		stats = fmt.Sprintf("p50 %s  p99 %s", short(quantile(sorted, 50)), short(quantile(sorted, 99)))
	}
	drawText(c.img, textLeft, top+16, shorten(stats, fits), inkColour)
}

// quantile is the p-th percentile of sorted latencies as a duration rounded
// to the millisecond, for the legend.
func quantile(sorted []time.Duration, p float64) time.Duration {
	return time.Duration(percentile(sorted, p) * float64(time.Millisecond)).Round(time.Millisecond)
}

// drawTitle centres title above the plot, in a bold made by drawing it twice.
func drawTitle(img draw.Image, title string) {
	x := (chartWidth - textWidth(title)) / 2
	drawText(img, x, 24, title, inkColour)
	drawText(img, x+1, 24, title, inkColour)
}

// shorten cuts s to at most n characters, marking a cut with "..".
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-2]) + ".."
}

// thickLine draws a horizontal or vertical line 3 px thick from (x0, y0) to
// (x1, y1).
func thickLine(img draw.Image, x0, y0, x1, y1 int, col color.Color) {
	r := image.Rect(x0, y0, x1, y1).Canon()
	fill(img, image.Rect(r.Min.X-1, r.Min.Y-1, r.Max.X+2, r.Max.Y+2), col)
}

// fill paints the rectangle r in col.
func fill(img draw.Image, r image.Rectangle, col color.Color) {
	draw.Draw(img, r, image.NewUniform(col), image.Point{}, draw.Src)
}

// drawText writes s in the 7x13 basic font with its baseline starting at
// (x, y).
func drawText(img draw.Image, x, y int, s string, col color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(col), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// textWidth is how many pixels wide s is in the basic font.
func textWidth(s string) int {
	return font.MeasureString(basicfont.Face7x13, s).Round()
}

// short writes a latency for the legend: milliseconds under a second, else
// seconds with one decimal ("72.5s", not "1m12.544s").
func short(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}
