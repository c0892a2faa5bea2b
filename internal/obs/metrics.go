package obs

// Kind is the instrument kind, and so the Prometheus type.
type Kind string

// Instrument kinds.
const (
	Counter       Kind = "counter"   // Prometheus counter
	Histogram     Kind = "histogram" // Prometheus histogram
	UpDownCounter Kind = "updown"    // Prometheus gauge
)

// Metric describes one instrument: the single table that the recorder, the
// dashboards, the alerts and the tests read.
type Metric struct {
	Name        string   // OpenTelemetry instrument name
	Prom        string   // Prometheus series name (histograms: the base of _bucket, _sum, _count)
	Kind        Kind     //
	Unit        string   // UCUM; "s" for every duration
	Description string   //
	Labels      []string // Prometheus labels it carries
	Buckets     []float64
}

// Bucket boundaries in seconds, one set per kind of duration: the SDK default
// assumes milliseconds and would put every lock timing in its first buckets.
var (
	// Round trips: sub-millisecond on loopback to seconds under a stall.
	roundTripBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}
	// Acquire includes the optional wait: up to tens of seconds.
	acquireBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// Validity left at commit: fractions of a TTL (seconds to a minute).
	remainingBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60}
	// Loss to the end of the work: a well-behaved handler stops in
	// microseconds; one that ignores its context runs on for seconds.
	cancellationBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// Wait for a contended lease: a hand-off right after a release
	// (sub-millisecond), backoff steps (milliseconds), up to a Config.Wait
	// bound of tens of seconds, with a boundary at the usual bounds (1s,
	// 5s, 10s, 30s) so that timed-out waits fill a bucket of their own.
	waitBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// Hold time: a request (milliseconds) to a batch job (an hour).
	holdBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}
	// A term: a flap (under a second) to a leader that runs for days.
	termBuckets = []float64{0.1, 1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 24 * 3600, 7 * 24 * 3600}
	// Time without a leader: a hand-off (a round trip) to a TTL's expiry
	// (seconds) to no candidate at all (minutes).
	leaderlessBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}
)

// Metrics lists every instrument lockwatch records.
var Metrics = []Metric{
	{LeaseAcquires, PromLeaseAcquires, Counter, "{acquire}", "Acquire calls by result: acquired, contended, unknown (may or may not have taken effect) or error.",
		[]string{LabelLockName, AttrResult}, nil},
	{LeaseAcquireDuration, PromLeaseAcquireDuration, Histogram, "s", "Time of an Acquire call, waits included, by result.",
		[]string{LabelLockName, AttrResult}, acquireBuckets},
	{LeaseUnknownResolutions, PromLeaseUnknownResolutions, Counter, "{resolution}", "How the clean-up of unknown acquires ended: released (it had been acquired), absent (it had not), unresolved. Released and absent bar the acquire from taking the key later.",
		[]string{LabelLockName, AttrResult}, nil},
	{LeaseRenewals, PromLeaseRenewals, Counter, "{renewal}", "Renewals by result: renewed, rejected (someone else holds the key), unknown (timeout or transport error).",
		[]string{LabelLockName, AttrResult}, nil},
	{LeaseRenewalDuration, PromLeaseRenewalDuration, Histogram, "s", "Round trip of the renewal pipeline each renewal was sent in.",
		[]string{LabelLockName}, roundTripBuckets},
	{LeaseLosses, PromLeaseLosses, Counter, "{loss}", "Leases lost, by reason: renewal_rejected, force_released, renewal_unknown, deadline, max_hold, closed, yielded (a shared lease's reader making way for a writer).",
		[]string{LabelLockName, AttrReason}, nil},
	{LeaseCommits, PromLeaseCommits, Counter, "{commit}", "Commit calls by what became of the final write: committed, near_expiry (written below the warning threshold), refused (not run), stale (rejected by a fence), failed (any other error).",
		[]string{LabelLockName, AttrResult}, nil},
	{LeaseCommitRemaining, PromLeaseCommitRemaining, Histogram, "s", "Validity left when Commit decided.",
		[]string{LabelLockName}, remainingBuckets},
	{LeaseCancellationLatency, PromLeaseCancellationLatency, Histogram, "s", "Time from a lease's loss (its context cancelled) to the end of the work it protected.",
		[]string{LabelLockName}, cancellationBuckets},
	{LeaseOverrunning, PromLeaseOverrunning, UpDownCounter, "{lease}", "Work still running after its lease was lost.",
		[]string{LabelLockName}, nil},
	{LeaseLateCompletions, PromLeaseLateCompletions, Counter, "{completion}", "Handlers that finished successfully after their lease was lost: potential stale writes.",
		[]string{LabelLockName}, nil},
	{FenceChecks, PromFenceChecks, Counter, "{check}", "Fencing-token checks at a resource, by result: accepted, rejected (stale), late (a guarded write refused because its request's handler had returned), and the tokens refused before any comparison: foreign (minted for another key), forged (not signed by a Locker), ahead (further ahead of the resource's clock than any Locker mints), unscoped (a plain number where none is allowed), malformed.",
		[]string{AttrResource, AttrResult}, nil},
	{FenceRejections, PromFenceRejections, Counter, "{rejection}", "Writes rejected at a resource for carrying a fencing token older than one it accepted: stale writes stopped.",
		[]string{AttrResource}, nil},
	{FenceRepairs, PromFenceRepairs, Counter, "{repair}", "High-water marks an operator set back to the newest fence minted for their key (lockwatch fence --force, RedisStore.Repair): a mark a token no lease carried had moved ahead of every lease, so that all of them were refused as stale.",
		[]string{AttrResource}, nil},
	{LeaseActive, PromLeaseActive, UpDownCounter, "{lease}", "Leases held and active.",
		[]string{LabelLockName}, nil},
	{LeaseHoldDuration, PromLeaseHoldDuration, Histogram, "s", "Time from acquire to release.",
		[]string{LabelLockName}, holdBuckets},
	{LeaseReleases, PromLeaseReleases, Counter, "{release}", "Releases by result: released, not_held (the key had expired or changed hands), unknown.",
		[]string{LabelLockName, AttrResult}, nil},
	{LeaseWaiting, PromLeaseWaiting, UpDownCounter, "{caller}", "Callers waiting in Acquire for a contended lease (Config.Wait): from the first contended answer until Acquire returns.",
		[]string{LabelLockName}, nil},
	{LeaseWaitDuration, PromLeaseWaitDuration, Histogram, "s", "Time Acquire calls waited for a contended lease, from the first contended answer to the result, by result: acquired, timed_out, cancelled, unknown or error. Acquires that did not wait are not counted.",
		[]string{LabelLockName, AttrResult}, waitBuckets},
	{LeaseForceReleases, PromLeaseForceReleases, Counter, "{release}", "Keys an administrator took back from their holder (lockwatch release --force), by result: released, not_held (the key was free, or held by another holder than the one named: nothing changed), unknown. The holder loses its lease at its next renewal (force_released).",
		[]string{LabelLockName, AttrResult}, nil},
	{ElectionLeader, PromElectionLeader, UpDownCounter, "{leader}", "1 while the candidate leads the election, else 0: one series per candidate that campaigns in the process. The sum over an election's candidates is how many think they lead.",
		[]string{AttrElection, AttrCandidate}, nil},
	{ElectionTermChanges, PromElectionTermChanges, Counter, "{change}", "Terms by change: started, and their ends, resigned (the leader released a live term) or lost.",
		[]string{AttrElection, AttrReason}, nil},
	{ElectionTerm, PromElectionTerm, UpDownCounter, "{fence}", "The newest term (its fence) any candidate of the process led; the largest over the processes is the election's newest.",
		[]string{AttrElection}, nil},
	{ElectionLeadershipDuration, PromElectionLeadershipDuration, Histogram, "s", "Terms' length, from the leader learning it leads to the term's release.",
		[]string{AttrElection}, termBuckets},
	{ElectionLeaderlessDuration, PromElectionLeaderlessDuration, Histogram, "s", "Time without a leader before a term, as its new leader measures it on the Redis clock: from the previous term's end (its resignation or loss, as that leader recorded it, else the validity it last recorded) to this term's start.",
		[]string{AttrElection}, leaderlessBuckets},
	{ElectionLosses, PromElectionLosses, Counter, "{loss}", "Terms lost, by the lease's loss reason: renewal_rejected, force_released, renewal_unknown, deadline, max_hold, closed, yielded (a shared lease's reader making way for a writer).",
		[]string{AttrElection, AttrReason}, nil},
	{ElectionLateCompletions, PromElectionLateCompletions, Counter, "{completion}", "Leaders' functions that returned after their term's key may have passed on: their writes may overlap the next term's, and only the fence stops them.",
		[]string{AttrElection}, nil},
	{PermitsHeld, PromPermitsHeld, UpDownCounter, "{permit}", "Permits the process holds, from Acquire's return to the permit's release or loss. The sum over the processes, against lockwatch_permits_limit, is the semaphore's saturation.",
		[]string{AttrSemaphore}, nil},
	{PermitsLimit, PromPermitsLimit, UpDownCounter, "{permit}", "The semaphore's limit (permits.Config.Limit) as the process's newest Semaphore of that name set it.",
		[]string{AttrSemaphore}, nil},
	{PermitsWaiting, PromPermitsWaiting, UpDownCounter, "{caller}", "Callers waiting in Acquire for a permit (Config.Wait): from the moment none was free until Acquire returns.",
		[]string{AttrSemaphore}, nil},
	{PermitsAcquires, PromPermitsAcquires, Counter, "{acquire}", "Acquire calls by result: acquired, contended (every permit held, also after the wait), unknown, error.",
		[]string{AttrSemaphore, AttrResult}, nil},
	{PermitsWaitDuration, PromPermitsWaitDuration, Histogram, "s", "Time Acquire calls waited for a permit, by result: acquired, timed_out, cancelled, unknown or error. Acquires that found a free permit are not counted.",
		[]string{AttrSemaphore, AttrResult}, waitBuckets},
	{PermitsLosses, PromPermitsLosses, Counter, "{loss}", "Permits lost before their release, by the lease's loss reason: renewal_rejected, force_released, renewal_unknown, deadline, max_hold, closed, yielded (a shared lease's reader making way for a writer).",
		[]string{AttrSemaphore, AttrReason}, nil},
}

// metricByName returns the table entry of an instrument name.
func metricByName(name string) Metric {
	for _, m := range Metrics {
		if m.Name == name {
			return m
		}
	}
	panic("obs: no metric " + name)
}
