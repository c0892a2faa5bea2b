package failover

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockwatch/lockwatch/internal/testenv/redistest"
)

// outcome is one fault: the time without a leader, and for a pause what the
// deposed leader did once it ran again.
type outcome struct {
	noLeader time.Duration
	// toEnd: from SIGCONT to the deposed leader's work loop ending.
	toEnd time.Duration
	// resumed steps it took live after the pause, refused of them by a check
	// of the term's validity; late: lockwatch reported the term's completion
	// late.
	resumed, refused int
	late             bool
	reason           string
}

// kill sends SIGKILL to the leader and starts a candidate in its place.
func (e *contest) kill(b *testing.B) outcome {
	old := e.leader
	e.killed[old] = true
	t0 := time.Now()
	if err := old.cmd.Process.Kill(); err != nil {
		b.Fatal(err)
	}
	lead := e.await(b, nil, "lead")
	_ = old.cmd.Wait()
	e.children = slices.DeleteFunc(e.children, func(c *child) bool { return c == old })
	delete(e.started, old)
	if e.leader == old {
		e.leader = nil
	}
	e.spawn()
	e.settle(b)
	return outcome{noLeader: lead.at.Sub(t0)}
}

// resign tells the leader to resign.
func (e *contest) resign(b *testing.B) outcome {
	old := e.leader
	t0 := time.Now()
	if _, err := fmt.Fprintln(old.stdin, "resign"); err != nil {
		b.Fatal(err)
	}
	lead := e.await(b, nil, "lead")
	e.settle(b)
	return outcome{noLeader: lead.at.Sub(t0)}
}

// pause stops the leader with SIGSTOP until the next leader starts, then
// lets it run again and waits for its work and its term to end.
func (e *contest) pause(b *testing.B) outcome {
	old := e.leader
	t0 := time.Now()
	if err := old.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		b.Fatal(err)
	}
	lead := e.await(b, nil, "lead")
	t2 := time.Now()
	if err := old.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		b.Fatal(err)
	}
	ended := e.await(b, old, "ended")
	stopped := e.await(b, old, "stopped")
	e.settle(b)
	o := outcome{noLeader: lead.at.Sub(t0), toEnd: ended.at.Sub(t2), late: stopped.f[2] == "1",
		reason: strings.Join(stopped.f[3:], " ")}
	o.resumed, _ = strconv.Atoi(ended.f[2])
	o.refused, _ = strconv.Atoi(ended.f[3])
	return o
}

// BenchmarkFailover measures the time without a leader after the leader is
// killed, resigns or is paused past its term, for lockwatch's election and
// etcd's (the package doc says how), each fault 20 times per election
// (-faults), the elections taking turns. Per case and election, in ms:
// <election>-p50-ms, -p99-ms and -max-ms of the time without a leader (with
// 20 faults the p99 is the max), and -faults. For the pause, also:
// -end-p50-ms and -end-max-ms, from SIGCONT to the deposed leader's work
// loop ending; -late-steps, the steps of work it took live after the pause,
// all faults together, and -late-steps-max, the most in one fault; and for
// lockwatch, the late steps that Lease.Err refused (-refused-steps) and the
// terms whose end it reported late (-late-completions).
//
// It runs once whatever b.N is: run it with -benchtime 1x.
func BenchmarkFailover(b *testing.B) {
	redis := redistest.Start(b)
	etcd := startEtcd(b)
	elections := []*contest{
		newContest(b, "lockwatch", envAddr+"="+redis.Addr()),
		newContest(b, "etcd", envAddr+"="+etcd),
	}
	for _, c := range []struct {
		name  string
		fault func(*contest, *testing.B) outcome
	}{{"kill", (*contest).kill}, {"resign", (*contest).resign}, {"pause", (*contest).pause}} {
		b.Run(c.name, func(b *testing.B) {
			got := map[string][]outcome{}
			for i := range *faults {
				for j := range elections {
					e := elections[(i+j)%len(elections)] // each goes first every other round
					got[e.name] = append(got[e.name], c.fault(e, b))
				}
			}
			for _, e := range elections {
				reportOutcomes(b, e.name, c.name == "pause", got[e.name])
			}
		})
	}
}

// reportOutcomes reports one election's outcomes of one case.
func reportOutcomes(b *testing.B, name string, pause bool, outs []outcome) {
	var noLeader, toEnd []time.Duration
	resumed, refused, late, most := 0, 0, 0, 0
	reasons := map[string]int{}
	for _, o := range outs {
		noLeader, toEnd = append(noLeader, o.noLeader), append(toEnd, o.toEnd)
		resumed, refused, most = resumed+o.resumed, refused+o.refused, max(most, o.resumed)
		if o.late {
			late++
		}
		if pause {
			reasons[o.reason]++
		}
	}
	for r, n := range reasons {
		b.Logf("%s: %d of %d terms ended: %s", name, n, len(outs), r)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(quantile(noLeader, 0.5)), name+"-p50-ms")
	b.ReportMetric(ms(quantile(noLeader, 0.99)), name+"-p99-ms")
	b.ReportMetric(ms(quantile(noLeader, 1)), name+"-max-ms")
	b.ReportMetric(float64(len(outs)), name+"-faults")
	if !pause {
		return
	}
	b.ReportMetric(ms(quantile(toEnd, 0.5)), name+"-end-p50-ms")
	b.ReportMetric(ms(quantile(toEnd, 1)), name+"-end-max-ms")
	b.ReportMetric(float64(resumed), name+"-late-steps")
	b.ReportMetric(float64(most), name+"-late-steps-max")
	if name == "lockwatch" {
		b.ReportMetric(float64(refused), name+"-refused-steps")
		b.ReportMetric(float64(late), name+"-late-completions")
	}
}

// quantile returns the q-quantile (0..1) of d, nearest rank; d is sorted in
// place.
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := int(math.Round(q*float64(len(d)))) - 1
	return d[min(max(i, 0), len(d)-1)]
}
