package main

import (
	"fmt"
	"html"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// Geometry of the timeline, in SVG user units (pixels).
const (
	tlLeft    = 70.0   // the row labels
	tlWidth   = 1600.0 // the time axis
	tlRow     = 22.0   // one holder
	tlFaultH  = 30.0   // the faults band
	tlTop     = 30.0   // the title
	tlLegendH = 40.0
)

// keyColours tell the keys apart; a lease bar has its key's colour.
var keyColours = []string{"#4e79a7", "#59a14f", "#b07aa1", "#9c755f", "#76b7b2", "#edc948"}

// timeline is what -timeline draws: the faults as bands across the top,
// every holder's leases as bars in a row of its own (coloured by key,
// outlined red when lost), and marks for each loss (red cross, where the
// holder learnt of it), each write the fence rejected (orange triangle)
// and each stale write a register accepted (black circle, only in a run
// that found one). Accepted writes are the ticks below each bar. A reader
// sees at a glance what each fault did: whose leases ended in it, who got
// the key next, whose late write the fence stopped.
type timeline struct {
	title  string
	start  int64 // the run's start on the history clock: x = 0
	end    int64
	faults []injected
	ops    []op
	leases []leaseRec
	stale  []op // stale writes accepted
}

func (tl timeline) x(t int64) float64 {
	span := float64(max(tl.end-tl.start, 1))
	return tlLeft + tlWidth*float64(min(max(t, tl.start), tl.end)-tl.start)/span
}

// write renders the timeline as one SVG file.
func (tl timeline) write(path string) error {
	return os.WriteFile(path, []byte(tl.svg()), 0o644)
}

func (tl timeline) svg() string {
	holders := map[string]bool{}
	for _, r := range tl.leases {
		holders[r.Holder] = true
	}
	for _, o := range tl.ops {
		holders[o.Holder] = true
	}
	rows := slices.Sorted(maps.Keys(holders))
	rowOf := map[string]int{}
	for i, h := range rows {
		rowOf[h] = i
	}
	keys := map[string]int{}
	for _, r := range tl.leases {
		keys[r.Key] = 0
	}
	names := slices.Sorted(maps.Keys(keys))
	for i, k := range names {
		keys[k] = i
	}
	rowY := func(h string) float64 { return tlTop + tlFaultH + 10 + float64(rowOf[h])*tlRow }
	height := tlTop + tlFaultH + 10 + float64(len(rows))*tlRow + 30 + tlLegendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n",
		tlLeft+tlWidth+20, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="13">%s</text>`+"\n", tlLeft, html.EscapeString(tl.title))

	// Faults, as bands down the whole chart, labelled in the band row.
	bottom := tlTop + tlFaultH + 10 + float64(len(rows))*tlRow
	for i, f := range tl.faults {
		x0, x1 := tl.x(f.Start), tl.x(f.End)
		fmt.Fprintf(&b, `<rect class="fault" x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f28e2b" fill-opacity="0.15"><title>%s</title></rect>`+"\n",
			x0, tlTop, max(x1-x0, 1), bottom-tlTop, html.EscapeString(f.String()+"; "+f.Note))
		y := tlTop + 10 + float64(i%2)*12
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" font-size="9">%s</text>`+"\n", x0+1, y, html.EscapeString(string(f.Kind)))
	}
	for _, h := range rows {
		y := rowY(h)
		fmt.Fprintf(&b, `<text x="4" y="%.0f">%s</text>`+"\n", y+tlRow/2+4, html.EscapeString(h))
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", tlLeft, tlLeft+tlWidth, y+tlRow, y+tlRow)
	}
	// Leases.
	for _, r := range tl.leases {
		y := rowY(r.Holder) + 3
		x0, x1 := tl.x(r.Acquired), tl.x(r.liveUntil())
		stroke := "none"
		if r.Lost {
			stroke = "#e15759"
		}
		tip := fmt.Sprintf("%s %s fence %d", r.Holder, r.Key, r.Fence)
		if r.Lost {
			tip += " lost (" + r.Reason + ")"
		}
		fmt.Fprintf(&b, `<rect class="lease" x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></rect>`+"\n",
			x0, y, max(x1-x0, 1), tlRow-8, keyColours[keys[r.Key]%len(keyColours)], stroke, html.EscapeString(tip))
		if r.Lost {
			at := r.Cancel
			if at == 0 {
				at = r.End // as the fault table counts it
			}
			cx := tl.x(at)
			fmt.Fprintf(&b, `<path class="loss" d="M%.1f %.1fl6 6m0 -6l-6 6" stroke="#e15759" stroke-width="2"/>`+"\n", cx-3, y+2)
		}
	}
	// Writes to the fenced Redis register: every register sees the same
	// tokens in the same Commit.
	for _, o := range tl.ops {
		if o.Kind != kindWrite || o.Reg != regRedis {
			continue
		}
		x, y := tl.x(o.Return), rowY(o.Holder)
		switch o.Outcome {
		case outOK:
			fmt.Fprintf(&b, `<line class="write" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333"/>`+"\n", x, x, y+tlRow-5, y+tlRow-1)
		case outStale:
			fmt.Fprintf(&b, `<path class="rejected" d="M%.1f %.1fl4 7h-8z" fill="#f28e2b" stroke="#333" stroke-width="0.5"><title>%s</title></path>`+"\n",
				x, y+tlRow-9, html.EscapeString(fmt.Sprintf("%s: write with fence %d rejected", o.Holder, o.Fence)))
		}
	}
	for _, o := range tl.stale {
		if o.Holder == "" {
			continue // found in an accept log only: the summary counts it
		}
		fmt.Fprintf(&b, `<circle class="stale" cx="%.1f" cy="%.1f" r="4" fill="black"><title>%s</title></circle>`+"\n",
			tl.x(o.Return), rowY(o.Holder)+tlRow/2, html.EscapeString(fmt.Sprintf("%s: stale write accepted by %s, fence %d", o.Holder, o.Reg, o.Fence)))
	}
	// The time axis, every 10 s (every 5 s for a run under a minute).
	step := 10 * time.Second
	if time.Duration(tl.end-tl.start) < time.Minute {
		step = 5 * time.Second
	}
	for t := time.Duration(0); t <= time.Duration(tl.end-tl.start); t += step {
		x := tl.x(tl.start + int64(t))
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#999"/><text x="%.1f" y="%.0f" font-size="9" text-anchor="middle">%v</text>`+"\n",
			x, x, bottom, bottom+4, x, bottom+14, t)
	}
	// Legend.
	ly := bottom + 34
	lx := tlLeft
	for _, k := range names {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="14" height="10" fill="%s"/><text x="%.0f" y="%.0f">lease on %s</text>`+"\n",
			lx, ly-9, keyColours[keys[k]%len(keyColours)], lx+18, ly, html.EscapeString(k))
		lx += 90
	}
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="14" height="10" fill="white" stroke="#e15759" stroke-width="1.5"/><text x="%.0f" y="%.0f">lost</text>`+"\n", lx, ly-9, lx+18, ly)
	lx += 60
	fmt.Fprintf(&b, `<path d="M%.0f %.0fl6 6m0 -6l-6 6" stroke="#e15759" stroke-width="2"/><text x="%.0f" y="%.0f">holder learns of the loss</text>`+"\n", lx, ly-8, lx+12, ly)
	lx += 170
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#333"/><text x="%.0f" y="%.0f">fenced write accepted</text>`+"\n", lx, lx, ly-9, ly, lx+6, ly)
	lx += 150
	fmt.Fprintf(&b, `<path d="M%.0f %.0fl4 7h-8z" fill="#f28e2b"/><text x="%.0f" y="%.0f">stale write rejected by the fence</text>`+"\n", lx, ly-8, lx+8, ly)
	lx += 210
	fmt.Fprintf(&b, `<circle cx="%.0f" cy="%.0f" r="4" fill="black"/><text x="%.0f" y="%.0f">stale write accepted</text>`+"\n", lx, ly-4, lx+8, ly)
	lx += 150
	fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="14" height="10" fill="#f28e2b" fill-opacity="0.3"/><text x="%.0f" y="%.0f">fault</text>`+"\n", lx, ly-9, lx+18, ly)
	b.WriteString("</svg>\n")
	return b.String()
}
