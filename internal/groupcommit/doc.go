// Package groupcommit sends script calls in shared pipelines, one lane per
// Redis master, so that many requests locking at once cost Redis (and the
// client) a few round trips rather than one each, while a lone request pays
// nothing for it:
//
//   - fewer than MaxInFlight pipelines in flight: the caller sends its own
//     call at once, on its own goroutine (no hand-off, no timer, no added
//     latency);
//   - otherwise the call queues; when a pipeline's replies are in, the
//     queued calls (up to maxBatch, see NewLanes) leave together in the
//     next pipeline, sent by the first queued caller (who is waiting
//     anyway), so there is no goroutine of its own.
//
// This is group commit as databases do it for their log: the batch size
// adapts to the load, because the batch is whatever arrived during one round
// trip. Renewals do not go through it: the scheduler already batches them,
// and a stalled acquire must never delay a renewal. Lane says how long each
// caller waits.
package groupcommit
