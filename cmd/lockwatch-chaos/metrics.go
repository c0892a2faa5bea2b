package main

import (
	"context"
	"fmt"

	"github.com/lockwatch/lockwatch/internal/obs"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// counts are the numbers the metric-exactness check compares: once as
// lockwatch's counters recorded them, once as the holders saw them.
type counts struct {
	Rejections  int64            `json:"rejections"`   // stale writes rejected by a fence
	Losses      int64            `json:"losses"`       // leases lost, every reason
	Late        int64            `json:"late"`         // late completions
	Acquires    map[string]int64 `json:"acquires"`     // by result
	LossReasons map[string]int64 `json:"loss_reasons"` // for the report
	// Up-down counters, which must be back at zero once every lease was
	// released and every acquire returned: a lease counted active, work
	// counted as overrunning its lost lease, or a caller counted as
	// waiting for a lease after the end is an accounting error.
	Active      int64 `json:"active"`
	Overrunning int64 `json:"overrunning"`
	Waiting     int64 `json:"waiting"`
}

func (c *counts) add(o counts) {
	c.Rejections += o.Rejections
	c.Losses += o.Losses
	c.Late += o.Late
	c.Active += o.Active
	c.Overrunning += o.Overrunning
	c.Waiting += o.Waiting
	for k, v := range o.Acquires {
		if c.Acquires == nil {
			c.Acquires = map[string]int64{}
		}
		c.Acquires[k] += v
	}
	for k, v := range o.LossReasons {
		if c.LossReasons == nil {
			c.LossReasons = map[string]int64{}
		}
		c.LossReasons[k] += v
	}
}

// collect reads lockwatch's counters from a manual reader, summed over
// every series (lock name, resource).
func collect(ctx context.Context, reader *sdkmetric.ManualReader) (counts, error) {
	c := counts{Acquires: map[string]int64{}, LossReasons: map[string]int64{}}
	err := eachIntSum(ctx, reader, func(name string, dp metricdata.DataPoint[int64]) {
		switch name {
		case obs.FenceRejections:
			c.Rejections += dp.Value
		case obs.LeaseLosses:
			c.Losses += dp.Value
			reason, _ := dp.Attributes.Value(obs.AttrReason)
			c.LossReasons[reason.AsString()] += dp.Value
		case obs.LeaseLateCompletions:
			c.Late += dp.Value
		case obs.LeaseActive:
			c.Active += dp.Value
		case obs.LeaseOverrunning:
			c.Overrunning += dp.Value
		case obs.LeaseWaiting:
			c.Waiting += dp.Value
		case obs.LeaseAcquires:
			result, _ := dp.Attributes.Value(obs.AttrResult)
			c.Acquires[result.AsString()] += dp.Value
		}
	})
	return c, err
}

// electionCounts are what an election's counters recorded, to compare with
// the terms the candidates saw: terms started, lost and completed late,
// and the leader gauge, back at zero once every candidate stopped.
type electionCounts struct {
	Started int64 `json:"started"`
	Lost    int64 `json:"lost"`
	Late    int64 `json:"late"`
	Leading int64 `json:"leading"`
}

func (c *electionCounts) add(o electionCounts) {
	c.Started += o.Started
	c.Lost += o.Lost
	c.Late += o.Late
	c.Leading += o.Leading
}

// collectElection reads the lockwatch_election_* counters from a manual
// reader, summed over every series.
func collectElection(ctx context.Context, reader *sdkmetric.ManualReader) (electionCounts, error) {
	var c electionCounts
	err := eachIntSum(ctx, reader, func(name string, dp metricdata.DataPoint[int64]) {
		switch name {
		case obs.ElectionTermChanges:
			if reason, _ := dp.Attributes.Value(obs.AttrReason); reason.AsString() == string(obs.TermStarted) {
				c.Started += dp.Value
			}
		case obs.ElectionLosses:
			c.Lost += dp.Value
		case obs.ElectionLateCompletions:
			c.Late += dp.Value
		case obs.ElectionLeader:
			c.Leading += dp.Value
		}
	})
	return c, err
}

// permitCounts are what the semaphore's lockwatch_permits_* series
// recorded, to compare with the permit holders' history: acquires by
// result, permits lost, and the held and waiting gauges, back at zero
// once every holder stopped; and its permits' leases' own counters.
type permitCounts struct {
	Acquires map[string]int64 `json:"acquires"`
	Losses   int64            `json:"losses"`
	Held     int64            `json:"held"`
	Waiting  int64            `json:"waiting"`
	Leases   counts           `json:"leases"`
}

// metricDiffs lists where a counter differs from what the holders saw.
type metricDiffs []string

func (d *metricDiffs) check(what string, metric, seen int64) {
	if metric != seen {
		*d = append(*d, fmt.Sprintf("%s: metrics %d, holders saw %d", what, metric, seen))
	}
}

// idle checks that nothing of a semaphore is held, waiting, active or
// overrunning once every holder stopped, naming its permits, its waiters
// and its leases as the caller does.
func (d *metricDiffs) idle(m permitCounts, permits, waiters, leases string) {
	d.check(permits+" held at the end", m.Held, 0)
	d.check(waiters+" at the end", m.Waiting, 0)
	d.check(leases+" active at the end", m.Leases.Active, 0)
	d.check(leases+" overrunning at the end", m.Leases.Overrunning, 0)
}

// collectPermits reads the lockwatch_permits_* series and the lease
// counters from a manual reader, summed over every series.
func collectPermits(ctx context.Context, reader *sdkmetric.ManualReader) (permitCounts, error) {
	leases, err := collect(ctx, reader)
	if err != nil {
		return permitCounts{}, err
	}
	c := permitCounts{Acquires: map[string]int64{}, Leases: leases}
	err = eachIntSum(ctx, reader, func(name string, dp metricdata.DataPoint[int64]) {
		switch name {
		case obs.PermitsAcquires:
			result, _ := dp.Attributes.Value(obs.AttrResult)
			c.Acquires[result.AsString()] += dp.Value
		case obs.PermitsLosses:
			c.Losses += dp.Value
		case obs.PermitsHeld:
			c.Held += dp.Value
		case obs.PermitsWaiting:
			c.Waiting += dp.Value
		}
	})
	return c, err
}

// eachIntSum collects reader once and calls each with every data point of
// its integer sums (counters and up-down counters) and the instrument's
// name.
func eachIntSum(ctx context.Context, reader *sdkmetric.ManualReader, each func(name string, dp metricdata.DataPoint[int64])) error {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		return err
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, dp := range sum.DataPoints {
					each(m.Name, dp)
				}
			}
		}
	}
	return nil
}
