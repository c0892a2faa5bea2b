// Package faultproxy is a TCP proxy for tests that breaks the network
// between a Redis client and its server on command.
//
// A lease is only as safe as its behaviour when the network misbehaves, and
// the interesting failures are not "server down": they are a command that
// reached Redis whose reply was lost (was the lock taken or not?), a link that
// swallows everything without closing (only timeouts can tell), a slow link
// that eats into the TTL, and connections reset mid-flight. Killing or
// pausing the server cannot produce these, so tests put this proxy between
// the client and redis-server and switch its Mode while the client runs.
//
// A Mode applies to connections already open as well as new ones, because the
// failures worth testing happen to pooled connections a client already
// trusts. Most modes see only byte chunks, not Redis commands: DropReplies
// loses whatever the server sent after the switch, so a test should switch
// modes between commands, not during one. Duplicate is the exception: it
// replays commands, so the proxy splits what clients send into whole RESP
// commands (and only that direction, and only to find their ends).
//
// The proxy listens on 127.0.0.1 only, and Close (also run by t.Cleanup)
// returns only after every goroutine it started has ended, so it is safe
// under goleak.
package faultproxy
