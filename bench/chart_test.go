package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"testing"
	"time"
)

// latenciesOf turns whole and fractional seconds into durations.
func latenciesOf(s ...float64) []time.Duration {
	out := make([]time.Duration, len(s))
	for i, v := range s {
		out[i] = time.Duration(v * float64(time.Second))
	}
	return out
}

// decodeChart runs LatencyChart and decodes its PNG, failing t on any error.
func decodeChart(t *testing.T, series []Series) image.Image {
	t.Helper()
	data, err := LatencyChart("test", series)
	if err != nil {
		t.Fatalf("LatencyChart: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decoding the PNG: %v", err)
	}
	return img
}

// rightmost is the largest x in the plot area with a pixel of exactly col,
// or -1 if there is none.
func rightmost(img image.Image, col color.RGBA) int {
	for x := plotArea.Max.X + 1; x >= plotArea.Min.X-1; x-- {
		for y := plotArea.Min.Y - 1; y <= plotArea.Max.Y+1; y++ {
			if color.RGBAModel.Convert(img.At(x, y)) == col {
				return x
			}
		}
	}
	return -1
}

func TestLatencyChartDrawsEachSeries(t *testing.T) {
	fast := latenciesOf(0.4, 0.2, 1.5, 0.9, 2)
	slow := latenciesOf(3, 1, 7.5, 4, 2.5)
	series := []Series{{Name: "fast", Latencies: fast}, {Name: "empty"}, {Name: "slow", Latencies: slow}}
	img := decodeChart(t, series)

	if got := img.Bounds(); got != image.Rect(0, 0, 900, 540) {
		t.Errorf("size = %v, want 900x540", got)
	}
	fastX, emptyX, slowX := rightmost(img, palette[0]), rightmost(img, palette[1]), rightmost(img, palette[2])
	if fastX < 0 || slowX < 0 {
		t.Fatalf("a series' colour is missing from the plot: fast at %d, slow at %d", fastX, slowX)
	}
	if emptyX >= 0 {
		t.Errorf("the empty series is drawn, at x=%d", emptyX)
	}
	if slowX <= fastX+50 {
		t.Errorf("slow series ends at x=%d, not well right of the fast one at x=%d", slowX, fastX)
	}
}

func TestLatencyChartLeavesInputAlone(t *testing.T) {
	l := latenciesOf(3, 1, 2)
	before := slices.Clone(l)
	decodeChart(t, []Series{{Name: "a", Latencies: l}})
	if !slices.Equal(l, before) {
		t.Errorf("caller's latencies changed: %v, were %v", l, before)
	}
}

func TestLatencyChartNeedsLatencies(t *testing.T) {
	for name, series := range map[string][]Series{
		"nil":       nil,
		"no series": {},
		"all empty": {{Name: "a"}, {Name: "b", Latencies: []time.Duration{}}},
	} {
		if _, err := LatencyChart("t", series); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestChartNiceStep(t *testing.T) {
	for _, tt := range []struct{ top, want float64 }{
		{7.5, 1}, {8, 1}, {9, 2}, {0.3, 0.05}, {40, 5}, {100, 20},
	} {
		if got := niceStep(tt.top); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("niceStep(%v) = %v, want %v", tt.top, got, tt.want)
		}
	}
}
