package alerts

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
)

// The recorded series, named level:metric:operations after the
// monitoring-mixin convention: the labels kept, the metric (without _total
// once it is a rate) and what was done to it. The dashboards read the rates;
// the alerts read the ratios.
const (
	// RecordAcquireRate is the rate of acquires over 5 minutes by job,
	// instance, lock_name and result.
	RecordAcquireRate = "job_instance_lock_name_result:lockwatch_lease_acquires:rate5m"
	// RecordCommitRate is the rate of commits over 5 minutes by job,
	// instance, lock_name and result.
	RecordCommitRate = "job_instance_lock_name_result:lockwatch_lease_commits:rate5m"
	// RecordUnknownAcquireRatio is the share of acquires with result
	// unknown by job and lock_name, absent where there were no acquires.
	RecordUnknownAcquireRatio = "job_lock_name:lockwatch_lease_acquires_unknown:ratio_rate5m"
	// RecordNearExpiryCommitRatio is the share of commits with result
	// near_expiry by job and lock_name, absent where there were no commits.
	RecordNearExpiryCommitRatio = "job_lock_name:lockwatch_lease_commits_near_expiry:ratio_rate5m"
)

// recordingGroup is the one group of recording rules: in one group the rules
// run in order, so a ratio reads the rates recorded in the same evaluation.
const recordingGroup = "lockwatch-recording"

// recording is one recording rule and its promtool test.
type recording struct {
	Record string
	Expr   string
	By     []string // the labels of Expr's series
	Test   exprTest
}

// exprTest is one promtool promql_expr_test of a recorded series: input
// series and the samples the recorded series must have at At.
type exprTest struct {
	About  string
	Series []series
	At     time.Duration
	Want   []sample
}

// sample is one expected sample: the labels, besides Config.TestLabels, that
// survive the rule's aggregation, and the value.
type sample struct {
	Labels map[string]string
	Value  float64
}

// ratioSource is a ratio that both a dashboard and an alert show: the share
// of a counter's rate whose result is Part. Its numerator and denominator
// are recorded together as one rate by result at the level the dashboards
// filter on (job, instance, lock_name); the alert-level ratio, by job and
// lock_name, is recorded from that.
type ratioSource struct {
	Counter string // telemetry Prom name
	Rate    string // record name of the rate by result
	Ratio   string // record name of the ratio
	Part    string // the result counted in the numerator
}

var (
	unknownAcquires = ratioSource{obs.PromLeaseAcquires, RecordAcquireRate, RecordUnknownAcquireRatio, string(obs.AcquireUnknown)}
	nearExpiry      = ratioSource{obs.PromLeaseCommits, RecordCommitRate, RecordNearExpiryCommitRatio, string(obs.CommitNearExpiry)}
)

// rateBy is the level of the recorded rates: what the dashboards filter and
// split on.
var rateBy = labels(labelJob, labelInstance, labelLock, labelResult)

// raw is the ratio computed from the counter itself: the Grafana-managed
// rules query it, as their Prometheus may not load the recording rules.
func (r ratioSource) raw(q promql, by []string) string {
	return ratio(by, q.rate(r.Counter, eq(labelResult, r.Part)), q.rate(r.Counter))
}

// recorded is the ratio computed from the recorded rates.
func (r ratioSource) recorded(q promql, by []string) string {
	return ratio(by, q.sel(r.Rate, eq(labelResult, r.Part)), q.sel(r.Rate))
}

// recordings is every recording rule, in evaluation order: rates first.
func recordings(q promql) []recording {
	byLock := labels(labelJob, labelLock)
	lock := map[string]string{labelLock: testLock}
	other := map[string]string{labelInstance: "127.0.0.2:9464", labelLock: testLock}
	idle := map[string]string{labelLock: "idle"}
	acquired, unknown := string(obs.AcquireAcquired), string(obs.AcquireUnknown)
	committed, near := string(obs.CommitCommitted), string(obs.CommitNearExpiry)

	return []recording{
		{
			Record: unknownAcquires.Rate,
			Expr:   sumBy(rateBy, q.rate(unknownAcquires.Counter)),
			By:     rateBy,
			Test: exprTest{
				About: "54 acquired and 6 unknown acquires a minute on one instance, 60 acquired on another",
				Series: []series{
					{obs.PromLeaseAcquires, with(lock, labelResult, acquired), "0+54x30"},
					{obs.PromLeaseAcquires, with(lock, labelResult, unknown), "0+6x30"},
					{obs.PromLeaseAcquires, with(other, labelResult, acquired), "0+60x30"},
				},
				At: 10 * time.Minute,
				Want: []sample{
					{with(lock, labelResult, acquired), 0.9},
					{with(lock, labelResult, unknown), 0.1},
					{with(other, labelResult, acquired), 1},
				},
			},
		},
		{
			Record: nearExpiry.Rate,
			Expr:   sumBy(rateBy, q.rate(nearExpiry.Counter)),
			By:     rateBy,
			Test: exprTest{
				About: "48 committed and 12 near-expiry commits a minute",
				Series: []series{
					{obs.PromLeaseCommits, with(lock, labelResult, committed), "0+48x30"},
					{obs.PromLeaseCommits, with(lock, labelResult, near), "0+12x30"},
				},
				At: 10 * time.Minute,
				Want: []sample{
					{with(lock, labelResult, committed), 0.8},
					{with(lock, labelResult, near), 0.2},
				},
			},
		},
		{
			Record: unknownAcquires.Ratio,
			Expr:   unknownAcquires.recorded(q, byLock),
			By:     byLock,
			Test: exprTest{
				About: "6 unknown acquires a minute out of 120 over two instances, and an idle lock: no ratio for it",
				Series: []series{
					{obs.PromLeaseAcquires, with(lock, labelResult, acquired), "0+54x30"},
					{obs.PromLeaseAcquires, with(lock, labelResult, unknown), "0+6x30"},
					{obs.PromLeaseAcquires, with(other, labelResult, acquired), "0+60x30"},
					{obs.PromLeaseAcquires, with(idle, labelResult, acquired), "0x30"},
					{obs.PromLeaseAcquires, with(idle, labelResult, unknown), "0x30"},
				},
				At:   10 * time.Minute,
				Want: []sample{{lock, 0.05}},
			},
		},
		{
			Record: nearExpiry.Ratio,
			Expr:   nearExpiry.recorded(q, byLock),
			By:     byLock,
			Test: exprTest{
				About: "12 near-expiry commits a minute out of 60, and an idle lock: no ratio for it",
				Series: []series{
					{obs.PromLeaseCommits, with(lock, labelResult, committed), "0+48x30"},
					{obs.PromLeaseCommits, with(lock, labelResult, near), "0+12x30"},
					{obs.PromLeaseCommits, with(idle, labelResult, committed), "0x30"},
				},
				At:   10 * time.Minute,
				Want: []sample{{lock, 0.2}},
			},
		},
	}
}

// checkRecordings enforces the level:metric:operations names: the level is
// the labels kept, in order.
func checkRecordings(rs []recording) error {
	for _, r := range rs {
		level, _, ok := strings.Cut(r.Record, ":")
		if !ok || level != strings.Join(r.By, "_") || strings.Count(r.Record, ":") != 2 {
			return fmt.Errorf("alerts: recording rule %s: name it level:metric:operations, the level being %s", r.Record, strings.Join(r.By, "_"))
		}
		if len(r.Test.Series) == 0 || len(r.Test.Want) == 0 {
			return fmt.Errorf("alerts: recording rule %s: needs a promtool test", r.Record)
		}
	}
	return nil
}
