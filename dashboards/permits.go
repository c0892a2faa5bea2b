package dashboards

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/units"
	"github.com/lockwatch/lockwatch/internal/obs"
)

// The series of package permits.
var (
	permitsHeld     = metric(obs.PromPermitsHeld)
	permitsLimit    = metric(obs.PromPermitsLimit)
	permitsWaiting  = metric(obs.PromPermitsWaiting)
	permitsAcquires = metric(obs.PromPermitsAcquires)
	permitsWait     = metric(obs.PromPermitsWaitDuration)
	permitsLosses   = metric(obs.PromPermitsLosses)
)

// bySemaphore splits permits series by semaphore name.
var bySemaphore = view{by: []string{obs.AttrSemaphore}}

// permitsPanels are the permits' row: each semaphore's held permits
// against its limit over time, its waiting callers and how their waits
// ended, its acquires and its losses. Permits series carry the semaphore's
// name, not a lock name: the Lock variable does not filter them.
func permitsPanels(first uint32) []cog.Builder[dashboard.Panel] {
	v := bySemaphore
	return []cog.Builder[dashboard.Panel]{
		seriesPanel(first, "Permits held against the limit",
			"Permits held by the reporting processes, summed, beside the semaphore's limit (permits.Config.Limit; the largest any process reports). Held at the limit while callers wait is saturation: their waits time out (LockwatchPermitsSaturated). Held above the limit only while processes disagree on it (a rolling change).",
			units.Short, false,
			query{gauge(permitsHeld, v.by), v.legend("held")},
			query{"max by (" + obs.AttrSemaphore + ") (" + selector(permitsLimit, "") + ")", v.legend("limit")}),
		seriesPanel(first+1, "Callers waiting for a permit",
			"Callers inside Acquire waiting for a permit (permits.Config.Wait), from finding none free until Acquire returns. A level that stays up means callers arrive about as fast as the holders release: they queue.",
			units.Short, false,
			query{gauge(permitsWaiting, v.by), v.legend("waiting")}),
		seriesPanel(first+2, "Permit waits by result",
			"How waits for a permit ended: acquired, timed_out (Config.Wait passed and the caller got ErrNotAcquired), cancelled (the caller's context ended first), unknown or error. Acquires that found a permit free are not waits.",
			units.OpsPerSecond, false,
			query{observations(permitsWait, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))}),
		seriesPanel(first+3, "Permit wait time by result",
			"Time from finding no permit free to the end of the wait, by result. Timed-out waits sit at the Config.Wait bound; acquired ones say how long a caller queues behind the holders.",
			units.Seconds, true, percentiles(view{by: v.with(obs.AttrResult)}, permitsWait, 0.5, 0.99)...),
		seriesPanel(first+4, "Permit acquires by result",
			"Acquire calls by result: acquired, contended (every permit held, also after the wait), unknown (an attempt's result unknown, cleaned up behind the caller), error.",
			units.OpsPerSecond, false,
			query{rate(permitsAcquires, v.with(obs.AttrResult)), v.legend(label(obs.AttrResult))}),
		seriesPanel(first+5, "Permits lost",
			"Permits lost before their release, by the lease's loss reason (renewal_rejected, force_released, renewal_unknown, deadline, max_hold, closed, yielded): the work under each was cancelled. closed is Locker.Close at shutdown, yielded a shared lease's reader giving its permit up to a writer.",
			units.OpsPerSecond, false,
			query{rate(permitsLosses, v.with(obs.AttrReason)), v.legend(label(obs.AttrReason))}),
	}
}
