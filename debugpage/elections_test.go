package debugpage_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockwatch/lockwatch/election"
	"github.com/lockwatch/lockwatch/internal/testenv/browsertest"
	"github.com/lockwatch/lockwatch/lease"
	"github.com/lockwatch/lockwatch/telemetry"
)

// campaign runs an election on lk (nil: f's Locker) as identity until the
// test ends, and returns once it leads (lead) or at once; the returned
// channel gives the term it led.
func (f *fixture) campaign(t *testing.T, lk *lease.Locker, name, identity string, lead bool) <-chan election.Term {
	t.Helper()
	if lk == nil {
		lk = f.locker
	}
	e, err := election.New(lk, "elected:"+name, election.Config{Name: name, Identity: identity})
	require.NoError(t, err)
	terms := make(chan election.Term, 1)
	ctx, cancel := context.WithCancelCause(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		_ = e.Run(ctx, func(ctx context.Context, term election.Term) error {
			terms <- term
			<-ctx.Done()
			return nil
		})
	})
	t.Cleanup(func() { cancel(errors.New("test over")); wg.Wait() })
	if lead {
		require.Eventually(t, func() bool { _, ok := e.Leading(); return ok }, 5*time.Second, 5*time.Millisecond)
	}
	return terms
}

// TestElections: the page lists the elections running in the process, a
// leader with its term and a candidate behind it, in the JSON and in the
// HTML.
func TestElections(t *testing.T) {
	f := newFixture(t, 2*time.Second, false)
	p, body := f.json(t)
	assert.Empty(t, p.Elections)
	assert.Contains(t, body, `"elections": []`, "an empty list, not null")
	assert.Contains(t, f.html(t), `id="no-elections"`)

	before := time.Now()
	term := <-f.campaign(t, nil, "scheduler", "pod-a", true)
	other := lease.NewLocker(f.srv.Client(t), lease.Config{Telemetry: telemetry.New(telemetry.Config{Logger: quiet})})
	t.Cleanup(func() { _ = other.Close() })
	f.campaign(t, other, "scheduler", "pod-b", false) // another Locker: the process's elections are listed
	require.Eventually(t, func() bool { p, _ := f.json(t); return len(p.Elections) == 2 }, 5*time.Second, 5*time.Millisecond)
	p, _ = f.json(t)
	a, b := p.Elections[0], p.Elections[1]
	assert.Equal(t, electionJSON{Election: "scheduler", Identity: "pod-a", Leading: true, Term: term.Fence, Since: term.Start.UTC()},
		electionJSON{a.Election, a.Identity, a.Leading, a.Term, a.Since.UTC()})
	assert.Equal(t, "pod-b", b.Identity)
	assert.False(t, b.Leading)
	assert.Zero(t, b.Term, "it never led")
	assert.False(t, b.Since.Before(before), "campaigning since its Run started")

	rows, ok := parseTable(t, f.html(t), "elections")
	require.True(t, ok)
	assert.Equal(t, []string{"scheduler", "scheduler"}, rows.col(t, "election"))
	assert.Equal(t, []string{"pod-a", "pod-b"}, rows.col(t, "identity"))
	assert.Equal(t, []string{"leading", "campaigning"}, rows.col(t, "leading"))
	assert.Equal(t, []string{strconv.FormatInt(term.Fence, 10), "–"}, rows.col(t, "term"))
}

// TestElectionsInBrowser: Chromium renders the elections' table.
func TestElectionsInBrowser(t *testing.T) {
	browsertest.Chromium(t)
	f := newFixture(t, 2*time.Second, false)
	term := <-f.campaign(t, nil, "relay", "pod-a", true)
	rows, ok := parseTable(t, browsertest.DumpDOM(t, f.url("")), "elections")
	require.True(t, ok)
	assert.Equal(t, []string{"relay"}, rows.col(t, "election"))
	assert.Equal(t, []string{"leading"}, rows.col(t, "leading"))
	assert.Equal(t, []string{strconv.FormatInt(term.Fence, 10)}, rows.col(t, "term"))
}
