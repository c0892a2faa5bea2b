package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stampRe finds the time at the start of every line the progress writes,
// plain or styled for a terminal.
var stampRe = regexp.MustCompile(`(\d+\.\d)s(?:\x1b\[0m)?  `)

// stamps lists the times in out, in the order they were written.
func stamps(t *testing.T, out string) []float64 {
	t.Helper()
	var times []float64
	for _, m := range stampRe.FindAllStringSubmatch(out, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		require.NoError(t, err)
		times = append(times, v)
	}
	return times
}

// TestStatusRedrawnWithTheEventsTime: on a terminal, the status line
// redrawn below an event shows the time of the redraw, not the time of
// its last tick, which would be older than the event above it.
func TestStatusRedrawnWithTheEventsTime(t *testing.T) {
	var out bytes.Buffer
	now := 1200 * time.Millisecond
	p := &progress{w: &out, term: true, elapsed: func() time.Duration { return now }}
	p.show(snapshot{requests: 3})
	now = 1500 * time.Millisecond
	p.event("stall", "replica-a stalls")
	assert.Equal(t, []float64{1.2, 1.5, 1.5}, stamps(t, out.String()),
		"the status, the event, the status redrawn below it")
}

// TestProgressTimesNeverGoBack writes events from several goroutines
// while the status is shown, on a terminal and elsewhere: the times, in
// the order written, never decrease.
func TestProgressTimesNeverGoBack(t *testing.T) {
	for _, term := range []bool{false, true} {
		t.Run(fmt.Sprintf("term=%v", term), func(t *testing.T) {
			var out bytes.Buffer
			start := time.Now()
			p := &progress{w: &out, term: term, elapsed: func() time.Duration {
				return time.Duration(time.Since(start).Microseconds()) * time.Millisecond // a 1000-fold clock
			}}
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					for i := range 50 {
						if g == 0 {
							p.show(snapshot{requests: int64(i)})
							continue
						}
						p.event("test", "event %d of goroutine %d", i, g)
					}
				})
			}
			wg.Wait()
			times := stamps(t, out.String())
			require.GreaterOrEqual(t, len(times), 4*50, "every line (and the terminal's redraws)")
			assert.IsNonDecreasing(t, times)
		})
	}
}
