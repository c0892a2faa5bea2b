package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// progress writes what the demo shows: a header, events as they happen,
// the live status, and the summary. On a terminal the status is one line
// redrawn in place, with events printed above it; anywhere else (a pipe, a
// file, a test) it is a plain line every few seconds, with no escape codes.
//
// Every line's time is read while the line is written, under mu, and the
// status line is formatted afresh whenever it is redrawn below an event:
// the times on screen never go backwards.
type progress struct {
	w       io.Writer
	term    bool
	every   time.Duration        // plain mode: interval of the status lines
	tick    time.Duration        // terminal mode: redraw interval
	elapsed func() time.Duration // time since the demo started

	mu     sync.Mutex
	snap   snapshot // the counts the status line shows
	status bool     // a status line is on screen (terminal mode)
}

func newProgress(w io.Writer, cfg config) *progress {
	start := time.Now()
	p := &progress{w: w, every: cfg.plainEvery, tick: cfg.progressTick,
		elapsed: func() time.Duration { return time.Since(start) }}
	if f, ok := w.(*os.File); ok && !cfg.forcePlain {
		p.term = isTerminal(f)
	}
	return p
}

// ANSI styles, used on a terminal only.
const (
	clearLine = "\r\x1b[2K"
	bold      = "\x1b[1m"
	dim       = "\x1b[2m"
	yellow    = "\x1b[33m"
	red       = "\x1b[31m"
	reset     = "\x1b[0m"
)

func (p *progress) style(s, code string) string {
	if !p.term {
		return s
	}
	return code + s + reset
}

// println writes whole lines, keeping the status line below them.
func (p *progress) println(lines ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.write(lines)
}

// write writes lines above the status line, which it redraws with the
// time of now. The caller holds mu.
func (p *progress) write(lines []string) {
	var b strings.Builder
	if p.term && p.status {
		b.WriteString(clearLine)
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if p.term && p.status {
		b.WriteString(p.statusLine(p.snap, p.elapsed()))
	}
	_, _ = io.WriteString(p.w, b.String())
}

// event prints one thing that just happened.
func (p *progress) event(kind, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.style(stamp(p.elapsed()), dim)
	p.write([]string{fmt.Sprintf("%s  %s %s", at, p.style(fmt.Sprintf("%-8s", kind), bold), what)})
}

// stamp formats a time since the start, as every line shows it.
func stamp(d time.Duration) string { return fmt.Sprintf("%6.1fs", d.Seconds()) }

// run shows the status until ctx is done.
func (p *progress) run(ctx context.Context, snap func() snapshot) {
	interval := p.every
	if p.term {
		interval = p.tick
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			if p.term && p.status {
				_, _ = io.WriteString(p.w, clearLine)
				p.status = false
			}
			p.mu.Unlock()
			return
		case <-t.C:
		}
		p.show(snap()) // gathered before the lock: it takes a while
	}
}

// show writes the status with s's counts: redrawn in place on a
// terminal, a line of its own elsewhere.
func (p *progress) show(s snapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	line := p.statusLine(s, p.elapsed())
	if p.term {
		p.snap, p.status = s, true
		_, _ = io.WriteString(p.w, clearLine+line)
		return
	}
	_, _ = io.WriteString(p.w, line+"\n")
}

// statusLine formats the status, as long as the terminal is wide enough
// for: a wrapped line could not be redrawn in place.
func (p *progress) statusLine(s snapshot, elapsed time.Duration) string {
	warn := func(n int64, code string) string {
		v := fmt.Sprint(n)
		if n > 0 {
			return p.style(v, code)
		}
		return v
	}
	at := stamp(elapsed)
	forms := []string{
		"%s  requests %d · acquired %d · contended %d · unknown %s · lost %s · stale writes rejected %s",
		"%s  requests %d · acquired %d · contended %d · unknown %s · lost %s · stale %s",
		"%s req %d acq %d cont %d unk %s lost %s stale %s",
	}
	width := p.width()
	for i, form := range forms {
		plain := fmt.Sprintf(form, at, s.requests, s.acquired, s.contended, fmt.Sprint(s.unknown), fmt.Sprint(s.lost), fmt.Sprint(s.stale))
		if width == 0 || utf8.RuneCountInString(plain) < width || i == len(forms)-1 {
			return fmt.Sprintf(form, p.style(at, dim), s.requests, s.acquired, s.contended, warn(s.unknown, yellow), warn(s.lost, yellow), warn(s.stale, red))
		}
	}
	return ""
}

// width is the terminal's width, 0 when unknown or not a terminal.
func (p *progress) width() int {
	if f, ok := p.w.(*os.File); ok && p.term {
		return termWidth(f)
	}
	return 0
}

func (p *progress) header(d *demo, metricsURL, debugURL string) {
	traces := "not exported (set OTEL_EXPORTER_OTLP_ENDPOINT)"
	if ep := otlpEndpoint(); ep != "" {
		traces = "OTLP to " + ep
	}
	faults := strings.Join(d.cfg.faults.names(), " ")
	if faults == "" {
		faults = "none"
	}
	length := "until Ctrl-C"
	if d.cfg.duration > 0 {
		length = fmt.Sprintf("%v (Ctrl-C stops it sooner)", d.cfg.duration)
	}
	lines := []string{
		p.style("lockwatch demo", bold) + ": fenced Redis leases under injected faults",
		"",
		"  redis     " + d.redis.desc,
	}
	for _, r := range d.replicas {
		lines = append(lines, fmt.Sprintf("  %-9s HTTP %s  gRPC %s", r.name, r.httpURL, r.grpcAdr))
	}
	lines = append(lines,
		"  ledger    "+d.ledgerSrv.url+" (stale writes get 409)",
		"  metrics   "+p.style(metricsURL, bold)+" (OpenMetrics + exemplars)",
		"  leases    "+p.style(debugURL, bold)+" ("+debugOthers(d.replicas)+")",
		"  traces    "+traces,
		"  faults    "+faults,
		"  running   "+length,
		"",
	)
	p.println(lines...)
}

// summary prints the final table. Every number but the client-side
// request counts is read from the metrics Prometheus scrapes.
func (p *progress) summary(d *demo, elapsed time.Duration, metricsURL string) {
	m := d.gather()
	w := d.workload
	var lines []string
	row := func(label string, total float64, detail string) {
		lines = append(lines, wrapRow(fmt.Sprintf("  %-22s %7.0f   ", label, total), detail, 80)...)
	}
	subrow := func(label, detail string) {
		lines = append(lines, wrapRow(fmt.Sprintf("    %-20s %7s   ", label, ""), detail, 80)...)
	}
	var outs []string
	for i := range numOutcomes {
		if n := w.outcomes[i].Load(); n > 0 {
			outs = append(outs, fmt.Sprintf("%s %d", outcomeNames[i], n))
		}
	}
	cancel := m.histogram(promCancellation)
	lines = append(lines, "",
		p.style(fmt.Sprintf("Summary after %v", elapsed.Round(100*time.Millisecond)), bold)+
			fmt.Sprintf(" (%d replicas, %d workers, %d accounts, TTL %v)", d.cfg.replicas, d.cfg.workers, d.cfg.accounts, d.cfg.ttl),
		"")
	row("requests", float64(w.requests.Load()), fmt.Sprintf("deposits %d · reports %d · streams %d",
		w.byKind[0].Load(), w.byKind[1].Load(), w.byKind[2].Load()))
	subrow("answered", strings.Join(outs, " · "))
	row("lease acquires", m.sum(promAcquires), m.detail(promAcquires, "result", "acquired", "contended", "unknown", "error"))
	row("unknown, cleaned up", m.sum(promResolutions), m.detail(promResolutions, "result", "released", "absent", "unresolved"))
	row("renewals", m.sum(promRenewals), m.detail(promRenewals, "result", "renewed", "rejected", "unknown"))
	row("leases lost", m.sum(promLosses), m.detail(promLosses, "reason", "renewal_unknown", "renewal_rejected", "force_released", "deadline", "max_hold", "closed"))
	row("cancellation latency", float64(cancel.count), cancel.describe("loss to end of work", "no lease was lost"))
	row("late completions", m.sum(promLateCompletions), "success answered after the lease was lost")
	row("commits", m.sum(promCommits), m.detail(promCommits, "result", "committed", "near_expiry", "refused", "stale", "failed"))
	row("fence checks", m.sum(promFenceChecks), "at the ledger: "+m.detail(promFenceChecks, "result", "accepted", "rejected"))
	row("stale writes rejected", m.sum(promFenceRejections), "late writes the ledger's fence stopped")
	row("releases", m.sum(promReleases), m.detail(promReleases, "result", "released", "not_held", "unknown"))
	row("force releases", m.sum(promForceReleases), "by the operator: "+m.detail(promForceReleases, "result", "released", "not_held", "unknown"))
	terms := m.by(promTermChanges, "reason")
	row("job leader terms", terms["started"], m.detail(promTermChanges, "reason", "resigned", "lost")+
		" · lost by "+m.detail(promTermLosses, "reason", "renewal_unknown", "renewal_rejected", "force_released", "deadline", "closed")+
		fmt.Sprintf(" · late completions %.0f", m.sum(promElectionLate)))
	leaderless := m.histogram(promLeaderless)
	row("time without a leader", float64(leaderless.count), leaderless.describe("before a term", "none measured"))
	lines = append(lines, "",
		"The lease, fence and election rows are lockwatch's own metrics, as served while the demo ran on",
		"  "+metricsURL)
	p.println(lines...)
}

// wrapRow puts detail after prefix, breaking it at " · " into lines of at
// most width columns, continued under its start.
func wrapRow(prefix, detail string, width int) []string {
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	var lines []string
	line := prefix
	for i, part := range strings.Split(detail, " · ") {
		switch {
		case i == 0:
			line += part
		case utf8.RuneCountInString(line)+3+utf8.RuneCountInString(part) > width:
			lines = append(lines, line+" ·")
			line = indent + part
		default:
			line += " · " + part
		}
	}
	return append(lines, line)
}

// otlpEndpoint is where otelsetup sends traces, if anywhere.
func otlpEndpoint() string {
	if ep := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ep != "" {
		return ep
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
}

// debugOthers says whose leases the debug page shows, and where the other
// replicas' are.
func debugOthers(replicas []*replica) string {
	s := replicas[0].name + "'s live leases; its job's at /debug/lockwatch/" + replicas[0].name + "/job"
	if len(replicas) > 1 {
		s += "; " + replicas[1].name + "'s at /debug/lockwatch/" + replicas[1].name
		if len(replicas) > 2 {
			s += ", and so on"
		}
	}
	return s
}
