package main

import "fmt"

// The cases of BenchmarkRedisInstructions, in the order of its table.
var instrCases = []struct{ name, desc string }{
	{"ping", "two PINGs"},
	{"raw", "raw floor: SET NX PX + EVALSHA compare-and-delete"},
	{"empty-scripts", "two EVALSHA calls of a script that returns at once (lockwatch's 3 keys, 4 arguments)"},
	{"lockwatch/fresh", "lockwatch's Acquire + Release, a new key per cycle"},
	{"lockwatch/reused", "lockwatch's Acquire + Release, 16 keys in turn (16 bars on each record)"},
}

func (rp *report) writeInstructions(p func(string, ...any)) {
	raw, ok := rp.med("RedisInstructions/raw", "Ir/cycle")
	if !ok {
		return
	}
	p("## Redis instructions per cycle\n\n")
	p("`BenchmarkRedisInstructions`: the instructions redis-server %s executes per cycle under valgrind's callgrind,\n", rp.machine.redisVersion())
	p("cycles one at a time, less those of a server started and stopped with nothing sent. A count, not a time: the\n")
	p("same on a loaded machine as on an idle one. At 16 goroutines on these 2 cores the server's CPU is what\n")
	p("bounds the cycle (the Redis µs/op above), and this is where it goes.\n\n")
	p("| case | instructions per cycle | × raw floor |\n|---|--:|--:|\n")
	for _, c := range instrCases {
		v, ok := rp.med("RedisInstructions/"+c.name, "Ir/cycle")
		if !ok {
			continue
		}
		p("| %s | %s | %s |\n", c.desc, num(v, 0), fmt.Sprintf("%.2f×", v/raw))
	}
	p("\n")
}
