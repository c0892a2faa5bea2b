package main

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/lockwatch/lockwatch/internal/obs"
	dto "github.com/prometheus/client_model/go"
)

// The Prometheus series the demo shows, by the constants the dashboards and
// alerts use too.
const (
	promAcquires        = obs.PromLeaseAcquires
	promResolutions     = obs.PromLeaseUnknownResolutions
	promRenewals        = obs.PromLeaseRenewals
	promLosses          = obs.PromLeaseLosses
	promCommits         = obs.PromLeaseCommits
	promCancellation    = obs.PromLeaseCancellationLatency
	promLateCompletions = obs.PromLeaseLateCompletions
	promFenceChecks     = obs.PromFenceChecks
	promFenceRejections = obs.PromFenceRejections
	promReleases        = obs.PromLeaseReleases
	promForceReleases   = obs.PromLeaseForceReleases
	promTermChanges     = obs.PromElectionTermChanges
	promTermLosses      = obs.PromElectionLosses
	promLeaderless      = obs.PromElectionLeaderlessDuration
	promElectionLate    = obs.PromElectionLateCompletions
)

// metrics is one gathering of the registry /metrics serves.
type metrics map[string]*dto.MetricFamily

func (d *demo) gather() metrics {
	m := metrics{}
	families, err := d.providers.Registry.Gather()
	if err != nil {
		d.fail(fmt.Errorf("gather metrics: %w", err))
	}
	for _, f := range families {
		m[f.GetName()] = f
	}
	return m
}

// by sums a counter or gauge by the value of one label ("" sums all).
func (m metrics) by(name, label string) map[string]float64 {
	out := map[string]float64{}
	f := m[name]
	if f == nil {
		return out
	}
	for _, s := range f.GetMetric() {
		v := s.GetCounter().GetValue() + s.GetGauge().GetValue()
		key := ""
		for _, l := range s.GetLabel() {
			if l.GetName() == label {
				key = l.GetValue()
			}
		}
		out[key] += v
	}
	return out
}

func (m metrics) sum(name string) float64 {
	var total float64
	for _, v := range m.by(name, "") {
		total += v
	}
	return total
}

// detail lists a series' values by label, in the order given (the closed
// set of the label), leaving out zeros.
func (m metrics) detail(name, label string, values ...string) string {
	by := m.by(name, label)
	var parts []string
	for _, v := range values {
		if n := by[v]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f", v, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " · ")
}

// histogram merges a histogram's series (all lock names).
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64
	counts []uint64 // cumulative, per bound
}

func (m metrics) histogram(name string) histogram {
	var h histogram
	f := m[name]
	if f == nil {
		return h
	}
	for _, s := range f.GetMetric() {
		sh := s.GetHistogram()
		h.count += sh.GetSampleCount()
		h.sum += sh.GetSampleSum()
		for i, b := range sh.GetBucket() {
			if len(h.bounds) <= i {
				h.bounds = append(h.bounds, b.GetUpperBound())
				h.counts = append(h.counts, 0)
			}
			h.counts[i] += b.GetCumulativeCount()
		}
	}
	return h
}

// quantile returns the upper bound of the bucket holding quantile q: what
// the histogram can tell without interpolating.
func (h histogram) quantile(q float64) float64 {
	rank := uint64(math.Ceil(q * float64(h.count)))
	for i, c := range h.counts {
		if c >= rank {
			return h.bounds[i]
		}
	}
	return math.Inf(1)
}

// describe gives the histogram's median, p99 and mean after what, or
// none when it is empty.
func (h histogram) describe(what, none string) string {
	if h.count == 0 {
		return none
	}
	sec := func(v float64) string {
		if math.IsInf(v, 1) {
			return "more"
		}
		d := time.Duration(v * float64(time.Second))
		switch {
		case d >= time.Second:
			d = d.Round(10 * time.Millisecond)
		case d >= 10*time.Millisecond:
			d = d.Round(time.Millisecond)
		case d >= time.Millisecond:
			d = d.Round(10 * time.Microsecond)
		}
		return d.String()
	}
	return fmt.Sprintf("%s: median ≤ %s · p99 ≤ %s · mean %s",
		what, sec(h.quantile(0.5)), sec(h.quantile(0.99)), sec(h.sum/float64(h.count)))
}

// snapshot is what the status line shows.
type snapshot struct {
	requests, acquired, contended, unknown, lost, stale int64
}

func (d *demo) snapshot() snapshot {
	m := d.gather()
	acq := m.by(promAcquires, "result")
	losses := m.by(promLosses, "reason")
	var lost float64
	for reason, n := range losses {
		if reason != "closed" { // a shutdown, not a fault
			lost += n
		}
	}
	return snapshot{
		requests:  d.workload.requests.Load(),
		acquired:  int64(acq["acquired"]),
		contended: int64(acq["contended"]),
		unknown:   int64(acq["unknown"]),
		lost:      int64(lost),
		stale:     int64(m.sum(promFenceRejections)),
	}
}
