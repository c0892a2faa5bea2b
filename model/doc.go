// Package model holds the SPIN model of lockwatch's lease protocol
// (lease.pml, checked by make model) and the test that holds the real
// scripts to it.
//
// The model is a second description of the protocol, made to be checked
// exhaustively: every interleaving of the Lockers, the server, the network,
// the clock and the faults within its bounds, against the invariants that
// state RELIABILITY.md's guarantees. Such a proof is worth what the model
// is worth, so the conformance test drives the real Lua scripts
// (lease/scripts, fence/scripts/write.lua) on a real redis-server through
// runs the model itself produces: SPIN's seeded random simulations print
// every step the modelled server takes, with the reply and the record it
// predicts, and the test replays each step and compares. A change to a
// script that the model does not follow fails that test; a change to the
// model that the scripts do not follow fails it too.
//
// README.md beside this file says how the model is built, its bounds and
// why they are enough, its mutants, and what it leaves out. The package has
// no code of its own.
package model
