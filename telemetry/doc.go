// Package telemetry is the one place that names and records lockwatch's
// signals: OpenTelemetry metrics, spans, span events and Warn logs for every
// moment at which a lock may fail to protect anything — an acquire whose
// result is unknown, a failed renewal, a lost lease, a commit near expiry,
// work that runs on after its lease was lost, and a stale write rejected by
// a fence.
//
// It depends on the OpenTelemetry API only. By default it uses the global
// providers (otel.GetMeterProvider, otel.GetTracerProvider) and
// slog.Default(), so a service that sets the global providers sees every
// signal without further configuration; Config's MeterProvider,
// TracerProvider and Logger override them (a nil provider follows the global
// one, also when it is set after New). Errors from the providers, which the
// API only reports for invalid names, go to the global OpenTelemetry error
// handler, as in the OTel contrib instrumentations. The lease package
// creates one Telemetry per Locker unless its Config.Telemetry gives one; a
// Telemetry is safe for concurrent use: share one between a Locker and
// fenced stores (fence.RedisConfig, fence.TableConfig; the middleware
// records through the lease's). Package otelsetup builds SDK providers with
// a Prometheus endpoint, for services that have none.
//
// # Prometheus series
//
// What the OTel Prometheus exporter makes of lockwatch's instruments with
// its default translation, for writing your own queries (the dashboards
// and alerts in this module are generated from the same catalogue, and a
// test scrapes a real exporter for every name here):
//
//   - lockwatch_lease_acquires_total{lock_name, result}: Acquire calls by
//     result: acquired, contended, unknown, error.
//   - lockwatch_lease_acquire_duration_seconds{lock_name, result}: histogram
//     of Acquire calls, waits included.
//   - lockwatch_lease_unknown_resolutions_total{lock_name, result}: the
//     clean-up of unknown acquires: released, absent, unresolved.
//   - lockwatch_lease_renewals_total{lock_name, result}: renewed, rejected,
//     unknown.
//   - lockwatch_lease_renewal_duration_seconds{lock_name}: histogram of the
//     renewal pipelines' round trips.
//   - lockwatch_lease_losses_total{lock_name, reason}: leases lost, by
//     lease.LossReason.
//   - lockwatch_lease_commits_total{lock_name, result}: what became of
//     each final write (Lease.Commit): committed, near_expiry, refused,
//     stale, failed.
//   - lockwatch_lease_commit_remaining_seconds{lock_name}: histogram of the
//     validity left when Commit decided.
//   - lockwatch_lease_cancellation_latency_seconds{lock_name}: histogram of
//     the time from a loss to the end of the work it protected.
//   - lockwatch_lease_overrunning{lock_name}: gauge of work still running
//     after its lease was lost.
//   - lockwatch_lease_late_completions_total{lock_name}: handlers that
//     answered success after their lease was lost.
//   - lockwatch_fence_checks_total{resource, result}: token checks at a
//     resource: accepted, rejected, late, foreign, forged, ahead, unscoped,
//     malformed. rejected is a stale token (also counted below); late a
//     guarded write refused because its request's handler had returned
//     (middleware.Guarded); the last five are tokens refused before any
//     comparison with the mark, which move no mark and are never counted
//     as rejections: foreign (minted for another lock key), forged (not
//     signed with the resource's secrets), ahead (unsigned, further ahead
//     of the resource's clock than any Locker mints), unscoped (a plain
//     number where none is allowed), malformed (counted by guards).
//   - lockwatch_fence_rejections_total{resource}: stale writes stopped.
//   - lockwatch_fence_repairs_total{resource}: high-water marks an operator
//     set back to the newest fence minted for their key
//     (fence.RedisStore.Repair, lockwatch fence --force).
//   - lockwatch_lease_active{lock_name}: gauge of leases held.
//   - lockwatch_lease_hold_duration_seconds{lock_name}: histogram of the
//     time from acquire to release.
//   - lockwatch_lease_releases_total{lock_name, result}: released, not_held,
//     unknown.
//   - lockwatch_lease_waiting{lock_name}: gauge of callers waiting in
//     Acquire for a contended lease (lease.Config.Wait), from the first
//     contended answer until Acquire returns.
//   - lockwatch_lease_wait_duration_seconds{lock_name, result}: histogram
//     of those waits by result: acquired, timed_out (the wait's bound
//     passed), cancelled (the caller's context ended), unknown, error. An
//     acquire that did not back off is no wait.
//   - lockwatch_lease_force_releases_total{lock_name, result}: keys an
//     administrator took back from their holder (lease.Locker.ForceRelease,
//     lockwatch release --force): released, not_held, unknown. lock_name is
//     the forcing Locker's.
//
// Package election records these, election being election.Config.Name (the
// lock_name of its terms' leases too, whose renewal latency, failures and
// losses above are the election's):
//
//   - lockwatch_election_leader{election, candidate}: gauge, 1 while the
//     candidate leads (from its term's start until its function returned
//     and the term was released), else 0 from its campaign's start. The
//     sum over an election's candidates is how many think they lead.
//   - lockwatch_election_term_changes_total{election, reason}: started,
//     resigned, lost: every term counts once as it starts and once as it
//     ends.
//   - lockwatch_election_term{election}: gauge of the newest term (its
//     fence) a candidate of the process led.
//   - lockwatch_election_leadership_duration_seconds{election}: histogram
//     of the terms' lengths.
//   - lockwatch_election_leaderless_duration_seconds{election}: histogram
//     of the time without a leader before each term, as its new leader
//     measured it on the Redis clock from the previous term's end as the
//     leader record tells it (election's package doc).
//   - lockwatch_election_losses_total{election, reason}: terms lost, by
//     lease.LossReason.
//   - lockwatch_election_late_completions_total{election}: leaders'
//     functions that returned after their term's key may have passed on.
//
// Package permits records these, semaphore being permits.Config.Name (the
// lock_name of its permits' leases too, whose renewals and losses above
// are the semaphore's):
//
//   - lockwatch_permits_held{semaphore}: gauge of the permits the process
//     holds, from Acquire's return to the permit's release or loss. The
//     sum over the processes against the limit is the saturation.
//   - lockwatch_permits_limit{semaphore}: gauge of the limit
//     (permits.Config.Limit) the process's newest Semaphore of that name
//     has. Every process exports it: take its max, not its sum.
//   - lockwatch_permits_waiting{semaphore}: gauge of callers waiting in
//     Acquire (permits.Config.Wait), from finding no permit free until
//     Acquire returns.
//   - lockwatch_permits_acquires_total{semaphore, result}: Acquire calls by
//     result, as the lease's: contended is every permit held, also after
//     the wait.
//   - lockwatch_permits_wait_duration_seconds{semaphore, result}: histogram
//     of those waits by result, as the lease's waits: acquired, timed_out,
//     cancelled, unknown, error. An Acquire that found a permit free is no
//     wait.
//   - lockwatch_permits_losses_total{semaphore, reason}: permits lost before
//     their release, by lease.LossReason.
//
// Attribute keys on metrics are short (lock.name, result, reason, resource)
// rather than namespaced: they are scoped by their instrument's lockwatch.*
// name, and they become the Prometheus labels that queries and alert rules
// spell out. Spans and span events carry the same keys for the same values,
// so a trace and a series name a result alike; the attributes only spans
// carry are namespaced (lockwatch.fence, lockwatch.key.hash,
// lockwatch.attempts, ...). Every outcome is a result, of its instrument's
// closed set; a loss has a reason (lease.LossReason).
//
// # Cardinality
//
// Metric attributes come from closed sets (result, reason) plus the lock
// name, which callers bound (a route or method, never a per-request key),
// the resource name of fence checks, and the election and semaphore names.
// The candidate label is on the leader gauge only: each process exports one
// series per election it campaigns in, so it churns as processes do, like
// the instance or pod label of their scrape target. The key, owner token
// and fence go on spans only, and the key only as its hash
// (lockwatch.key.hash) unless Config.RawKeys is set (lockwatch.key),
// because keys are often customer or tenant identifiers. Attribute sets are
// built once per lock name and value and cached, so recording allocates
// nothing for attributes.
//
// # Exemplars and traces
//
// Every measurement is recorded with the context of the work it concerns:
// the lease.acquire span (a child of the caller's) for acquire and wait
// latency, the request's span (the lease's context) for renewals, losses,
// commits and releases, the writer's span for fence rejections. With a
// sampled span, the SDK attaches its trace and span ids to histograms and
// counters as exemplars, visible on an OpenMetrics scrape, so a spike in
// stale writes links to the trace that wrote late. Through the Prometheus
// exporter a counter shows one exemplar, and the SDK's default reservoir
// keeps it on an old trace when events are rare: otelsetup installs
// otelsetup.ExemplarView, which fixes that; a service with a MeterProvider
// of its own adds the view itself (the otelsetup package doc says why).
//
// Spans: lease.acquire (a child of the caller's span, status Error only for
// unknown or failed acquires; contention is an answer, not an error),
// fence.check, and the events lease.renewal_failed, lease.lost,
// lease.commit and lease.late_completion on the request's span, and
// election.term, one per term, from its start to its release, a child of
// the context given to election's Run: its leader's function's context
// carries it. A renewal that succeeds adds no event: a lease held for hours
// would otherwise fill its span.
//
// # Logs
//
// Losses (of leases, election terms and permits), unknown or failed
// acquires, their clean-up, renewal failures, late completions, fence
// rejections, refused tokens and fence repairs are logged at Warn with
// trace_id and span_id. The default logger is slog.Default(): these are the
// events an operator must not miss, and a Warn per event is cheap next to
// the Redis round trip behind it. Under a Redis outage that is two lines
// per lease (the failed renewal, the loss); give Config.Logger a
// rate-limiting or discarding handler (slog.DiscardHandler) if that is too
// many. Close loses the leases still held with reason closed, and a shared
// lease's reader making way for a writer is lost with reason yielded:
// alerts on losses should exclude both.
package telemetry
