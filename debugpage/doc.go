// Package debugpage serves the live page of the leases one process holds:
// what its lease.Locker holds right now and what it lost lately, as an
// operator wants to see it in the middle of an incident.
//
// Mount it like net/http/pprof, on an internal port, never on the one the
// public traffic reaches (it names locks and, with
// telemetry.Config.RawKeys, keys, which are request input):
//
//	mux.Handle("/debug/lockwatch", debugpage.Handler(locker))
//
// # What it shows
//
// Every request renders a new lease.Locker.Snapshot: the active leases of the
// Locker and of every Locker made from it with With (lock name, key hash,
// fence, age, validity left, confirmed renewals, the latency of the last
// renewal, state), and the last leases lost (at most 32, newest first) with
// their reason, when they were lost and how long they had been held. Keys
// appear as their hash, as on spans and in Redis; the raw key only when the
// Locker's Telemetry was made with telemetry.Config.RawKeys.
//
// It also lists the elections the process campaigns in: every
// election.Election whose Run runs, whichever Locker it was made with, by
// election name and identity: whether it leads, its term (the one it
// leads, else the last it led) and since when it leads, or campaigns.
//
// And the permits the process holds: every permits.Permit taken and not
// yet released or lost, whichever Locker its Semaphore was made with, by
// semaphore name, then key hash, then index: the permit's index, its fence
// and since when it is held. The semaphore's key shows as its hash, raw
// only with RawKeys, as the leases' keys do.
//
// It is one process's view of its own leases, by its own monotonic clock,
// not Redis's: a lease this process still shows as held may already be gone
// from Redis (it then loses it at its next renewal), and the page knows
// nothing of the leases other replicas hold. For what Redis holds for a key
// (its holder, TTL, newest fence), ask Redis: every row of a lease, a loss
// or a permit ends with the command that does, by the key hash the row
// shows, as in
//
//	lockwatch inspect --key-hash 3f0c… [--permit I] [--namespace NS]
//
// (--permit for a permit, --namespace unless the Locker's is the default);
// lockwatch release --force takes the same flags. From Go, with the raw
// key: lease.Locker.Inspect.
//
// The HTML page refreshes itself every 2 seconds (a meta refresh: the page
// runs no script). It is self-contained, with inline CSS and no external
// asset, so it works on an air-gapped host, and it is read-only: it has no
// form or button, and answers only GET and HEAD (405 otherwise). Its
// Content-Security-Policy forbids scripts, external loads and framing.
//
// # JSON
//
// ?format=json serves the same snapshot as application/json, for scripts
// and health checks. Durations are milliseconds (numbers, with microsecond
// precision), times RFC 3339 with nanoseconds, and the field names are
// stable:
//
//	{
//	  "taken": "2026-12-01T10:00:00.123456789Z",  // when the snapshot was taken
//	  "leases": [{                                 // active leases, by name, then key hash
//	    "name": "invoices",                        // lock name (lease.Config.Name)
//	    "key_hash": "3f0c…",                       // the key's hash, as on spans and in Redis
//	    "key": "invoice:42",                       // raw key: only with telemetry.Config.RawKeys
//	    "namespace": "lockwatch",                  // lease.Config.Namespace: lockwatch inspect --namespace
//	    "permit": 1,                               // a permit's lease only: its index (lockwatch inspect --permit)
//	    "fence": 1764583200123456,                 // fencing token
//	    "holder": "5f1c0e9a27b4",                  // its owner token's hash: lockwatch release --force --holder
//	    "state": "held",                           // held, renewing, final or expired (lease.LeaseInfo.State)
//	    "ttl_ms": 2000,                            // the lease's TTL in Redis
//	    "age_ms": 1234.5,                          // since the acquire was sent
//	    "remaining_ms": 812.25,                    // validity left (time to the cancel point)
//	    "renewals": 3,                             // confirmed renewals
//	    "last_renewal_ms": 0.85                    // latency of the last confirmed renewal, 0 before the first
//	  }],
//	  "losses": [{                                 // the last losses, newest first (at most 32)
//	    "name": "…", "key_hash": "…", "key": "…", "namespace": "…", "permit": 1, "fence": 17,
//	    "reason": "force_released",                // lease.LossReason
//	    "lost_at": "2026-12-01T09:59:58.5Z",       // when its context was cancelled
//	    "held_ms": 5012.75,                        // how long it had been held
//	    "renewals": 14, "last_renewal_ms": 1.5
//	  }],
//	  "elections": [{                              // the process's candidates, by election, then identity
//	    "election": "scheduler",                   // election.Config.Name
//	    "identity": "scheduler-7d9f-a",            // election.Config.Identity
//	    "leading": true,
//	    "term": 1764583200123456,                  // the term it leads, else the last it led; 0 before the first
//	    "since": "2026-12-01T09:58:00Z"            // when it started leading, or campaigning
//	  }],
//	  "permits": [{                                // the process's held permits, by semaphore, key hash, index
//	    "semaphore": "exports",                    // permits.Config.Name
//	    "key_hash": "9b2e…",                       // the semaphore key's hash, as on spans and in Redis
//	    "key": "exports:daily",                    // raw key: only with telemetry.Config.RawKeys
//	    "namespace": "lockwatch",                  // its Locker's lease.Config.Namespace
//	    "index": 1,                                // the permit's index, 0 to the limit - 1
//	    "fence": 1764583200123999,                 // the permit's fencing token
//	    "since": "2026-12-01T09:59:30Z"            // when Acquire took it
//	  }]
//	}
//
// leases, losses, elections and permits are [] (never null) when empty.
// Any other format is answered 400.
package debugpage
