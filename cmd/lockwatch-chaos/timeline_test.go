package main

import (
	"encoding/xml"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The timeline is well-formed SVG with one band per fault, one bar per
// lease and one mark per loss, rejected write and stale write accepted.
func TestTimeline(t *testing.T) {
	const s = int64(time.Second)
	tl := timeline{
		title: "a <run>", start: 100 * s, end: 130 * s,
		faults: []injected{{fault: fault{N: 1, Kind: faultPrimaryKill}, Start: 105 * s, End: 109 * s, Note: "promoted"}},
		leases: []leaseRec{
			{Holder: "p1", Key: "k1", Fence: 1, Acquired: 101 * s, Done: 106 * s, Released: 107 * s, Lost: true, Reason: "renewal_unknown", Cancel: 106 * s},
			{Holder: "g1", Key: "k1", Fence: 2, Acquired: 109 * s, Done: 112 * s, Released: 111 * s},
			{Holder: "g1", Key: "k2", Fence: 3, Acquired: 113 * s, Done: 140 * s, Released: 140 * s}, // past the end: clipped
		},
		ops: []op{
			{Holder: "g1", Kind: kindWrite, Reg: regRedis, Fence: 2, Outcome: outOK, Return: 110 * s},
			{Holder: "p1", Kind: kindWrite, Reg: regRedis, Fence: 1, Outcome: outStale, Return: 111 * s},
			{Holder: "p1", Kind: kindWrite, Reg: regPG, Fence: 1, Outcome: outStale, Return: 111 * s}, // one register drawn
		},
		stale: []op{{Holder: "p1", Reg: regGuard, Fence: 1, Return: 112 * s}},
	}
	path := filepath.Join(t.TempDir(), "run.svg")
	require.NoError(t, tl.write(path))
	svg := tl.svg()

	classes := map[string]int{}
	dec := xml.NewDecoder(strings.NewReader(svg))
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err, "well-formed XML")
		if el, ok := tok.(xml.StartElement); ok {
			for _, a := range el.Attr {
				if a.Name.Local == "class" {
					classes[a.Value]++
				}
			}
		}
	}
	assert.Equal(t, map[string]int{"fault": 1, "lease": 3, "loss": 1, "write": 1, "rejected": 1, "stale": 1}, classes)
	assert.Contains(t, svg, "a &lt;run&gt;", "text is escaped")
	assert.Contains(t, svg, "p1 k1 fence 1 lost (renewal_unknown)")
	assert.InDelta(t, tlLeft+tlWidth, tl.x(140*s), 0.01, "a lease past the end is clipped to the axis")
	assert.InDelta(t, tlLeft, tl.x(0), 0.01)
}
