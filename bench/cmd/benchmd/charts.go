package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The report's charts are SVG files written next to it and embedded as
// images: one bar chart and one range chart, drawn here with nothing but
// rectangles, lines and text, so that they render on any host (GitHub's
// viewer included) and need no library.

// bar is one bar of a bar chart: a label and a value, with the colour of
// its series.
type bar struct {
	group, series string
	value         float64
}

// chart is an SVG file of the report: where it goes and how the report links
// it.
type chart struct {
	dir  string // where the file is written
	link string // dir as seen from the report
}

// write saves svg as name and returns the Markdown that embeds it.
func (c chart) write(name, alt, svg string) (string, error) {
	if c.dir == "" {
		return "", nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(c.dir, name), []byte(svg), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("![%s](%s)\n\n", alt, filepath.ToSlash(filepath.Join(c.link, name))), nil
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// barChart draws grouped horizontal bars (one group per label, one bar per
// series in it) on a linear axis from 0, with a dashed reference line at
// ref (the goal) when ref > 0.
func barChart(title, axis string, bars []bar, ref float64, refLabel string) string {
	var groups, series []string
	top := ref
	for _, b := range bars {
		if !slices.Contains(groups, b.group) {
			groups = append(groups, b.group)
		}
		if !slices.Contains(series, b.series) {
			series = append(series, b.series)
		}
		top = math.Max(top, b.value)
	}
	top = niceCeil(top)
	const left, width, barH, gap = 260, 420, 14, 10
	groupH := len(series)*barH + gap
	height := 60 + len(groups)*groupH + 20*len(series) + 30
	x := func(v float64) float64 { return left + v/top*width }
	var b strings.Builder
	svgHeader(&b, left+width+40, height, title)
	y0 := 40
	for i, g := range groups {
		gy := y0 + i*groupH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, gy+len(series)*barH/2+4, esc(g))
		for j, s := range series {
			for _, v := range bars {
				if v.group == g && v.series == s {
					by := gy + j*barH
					fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`, left, by, x(v.value)-left, barH-2, palette[j%len(palette)])
					fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.2f</text>`+"\n", x(v.value)+4, by+barH-4, v.value)
				}
			}
		}
	}
	axisY := y0 + len(groups)*groupH
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, axisY, left+width, axisY)
	for k := 0; k <= 4; k++ {
		v := top * float64(k) / 4
		tick(&b, x(v), axisY, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+width/2, axisY+30, esc(axis))
	if ref > 0 {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444" stroke-dasharray="4 3"/><text x="%.1f" y="%d" fill="#444">%s</text>`+"\n",
			x(ref), y0-6, x(ref), axisY, x(ref)+4, y0-8, esc(refLabel))
	}
	ly := axisY + 44
	for j, s := range series {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n", left, ly+j*20, palette[j%len(palette)], left+18, ly+j*20+10, esc(s))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// spread is one row of a range chart: marks at p50, p90 and p99, a line to
// the max.
type spread struct {
	label              string
	p50, p90, p99, max float64
}

// rangeChart draws each row's p50–p99 as a bar and its max as a whisker,
// on a logarithmic axis (µs): latencies of libraries that differ tenfold
// stay readable side by side.
func rangeChart(title string, rows []spread) string {
	lo, hi := math.Inf(1), 0.0
	for _, r := range rows {
		lo, hi = math.Min(lo, r.p50), math.Max(hi, r.max)
	}
	lo = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 1))))
	hi = math.Pow(10, math.Ceil(math.Log10(math.Max(hi, lo*10))))
	const left, width, rowH = 300, 420, 26
	x := func(v float64) float64 {
		return left + (math.Log10(math.Max(v, lo))-math.Log10(lo))/(math.Log10(hi)-math.Log10(lo))*width
	}
	height := 60 + len(rows)*rowH + 60
	var b strings.Builder
	svgHeader(&b, left+width+40, height, title)
	y0 := 40
	for i, r := range rows {
		y := y0 + i*rowH
		c := palette[i%len(palette)]
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+12, esc(r.label))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`, x(r.p99), y+8, x(r.max), y+8, c)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="16" fill="%s" fill-opacity="0.35" stroke="%s"/>`, x(r.p50), y, x(r.p99)-x(r.p50), c, c)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="3"/>`, x(r.p50), y-2, x(r.p50), y+18, c)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x(r.p90), y, x(r.p90), y+16, c)
	}
	axisY := y0 + len(rows)*rowH
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", left, axisY, left+width, axisY)
	for v := lo; v <= hi*1.0001; v *= 10 {
		tick(&b, x(v), axisY, trimFloat(v))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">µs from the start of the release to the waiter holding the key (log scale)</text>`+"\n", left+width/2, axisY+32)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">thick mark: p50 · box: p50 to p99, thin mark inside: p90 · whisker: max</text>`+"\n", left-200, axisY+50)
	b.WriteString("</svg>\n")
	return b.String()
}

// svgHeader starts an SVG of the given size on a white ground, with its
// title.
func svgHeader(b *strings.Builder, width, height int, title string) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/><text x="10" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
}

// tick draws an axis tick at x with its label.
func tick(b *strings.Builder, x float64, axisY int, label string) {
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n",
		x, axisY, x, axisY+4, x, axisY+16, label)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
