// Package lockwatchtest gives a service's own tests a lease.Locker on an
// embedded Redis, and the four faults a holder of a lockwatch lease must
// handle, on demand: so a test can show that the service refuses contended
// work, runs no work whose acquire is unknown, stops when its lease is
// lost, and gives up a write the fence rejects.
//
// It is a module of its own, so that the embedded Redis (miniredis, which
// runs lockwatch's Lua scripts) goes into the go.mod of the services that
// test with it, never into the library's:
//
//	srv := lockwatchtest.New(t, lease.Config{TTL: time.Second})
//	handler := middleware.HTTP(srv.Locker(), keyOf, middleware.Config{})(pay)
//	release := srv.Contend("invoice:42") // another owner holds the key
//
// The server starts for the test and stops at its end (t.Cleanup), with the
// Locker. Keys expire with the wall clock, as in Redis, so a short TTL (a
// second) keeps the tests that wait for a renewal short.
//
// Each fault acts as its namesake does in production, and the code under
// test sees what it would see against a real Redis (the package's tests
// compare the two):
//
//   - Contend: another owner holds the key; Acquire returns a
//     *lease.NotAcquiredError (errors.Is lease.ErrNotAcquired).
//   - DropNextReply: the next command about the key reaches Redis, takes
//     effect, and its reply is lost; Acquire returns lease.ErrUnknown at
//     the Locker's AcquireTimeout, and the Locker frees the key behind it.
//   - Lose: the key is gone from Redis, as after a pause past the TTL; the
//     holder's next renewal finds it so and cancels the lease's Context
//     with a *lease.LostError cause (lease.LossRenewalRejected).
//   - NewerToken: a token a next holder would carry, newer than the last
//     call's; written to a fenced store, it moves the store's mark past
//     the holder's token, whose next write the store rejects
//     (*fence.StaleError, fence.ErrStale).
//
// The package's example test, TestPayHandlesEveryFault, tests a payment
// handler behind the middleware against all four; each method's example
// shows its fault alone.
package lockwatchtest
