package main

import "fmt"

// The client configurations and key modes of BenchmarkClients, in the
// order of its table.
var (
	clientConfigs = []string{"pool=default,timeouts=on", "pool=default,timeouts=off", "pool=64,timeouts=on", "pool=64,timeouts=off"}
	clientKeys    = []string{"fresh", "reused"}
)

func clientName(cfg, keys, impl string) string { return "Clients/" + cfg + "/" + keys + "/" + impl }

// clientRatio is impl's ns/op over base's in one configuration, per run.
func (rp *report) clientRatio(cfg, keys, impl, base string) (float64, bool) {
	return rp.ratio(clientName(cfg, keys, impl), clientName(cfg, keys, base), "ns/op")
}

func (rp *report) writeClients(p func(string, ...any)) {
	runs := rp.r.runs(clientName(clientConfigs[0], "fresh", "raw"), "ns/op")
	if runs == 0 {
		return
	}
	p("## Client configurations (%d runs)\n\n", runs)
	p("`BenchmarkClients`: the cycle from 16 goroutines, every implementation on one go-redis client configured as\n")
	p("a user may: go-redis's default pool (10 connections per CPU) or `PoolSize` 64, `ContextTimeoutEnabled` on or\n")
	p("off; each configuration a client of its own. *fresh*: a new key per op (its fence record holds one bar);\n")
	p("*reused*: one key per goroutine for every op (its record keeps the 16 newest released tokens barred).\n")
	p("Ratios per run, medians shown. CPU: client + Redis µs per op.\n\n")
	p("| client | keys | raw ns/op | lockwatch ns/op | ×raw | ×redislock | `ReleaseAsync` ×raw | ×redislock | CPU raw | CPU lockwatch | CPU `ReleaseAsync` |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	var bars []bar
	for _, cfg := range clientConfigs {
		for _, keys := range clientKeys {
			raw, ok := rp.med(clientName(cfg, keys, "raw"), "ns/op")
			if !ok {
				continue
			}
			lw, _ := rp.med(clientName(cfg, keys, "lockwatch-off"), "ns/op")
			cells := []string{}
			for _, impl := range []string{"lockwatch-off", "lockwatch-async"} {
				for _, base := range []string{"raw", "redislock"} {
					x, ok := rp.clientRatio(cfg, keys, impl, base)
					cells = append(cells, cond(ok, fmt.Sprintf("%.2f×", x)))
					if ok && base == "redislock" {
						series := "Release"
						if impl == "lockwatch-async" {
							series = "ReleaseAsync"
						}
						bars = append(bars, bar{group: cfg + ", " + keys, series: series, value: x})
					}
				}
			}
			p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", cfg, keys, num(raw, 0), num(lw, 0), cells[0], cells[1], cells[2], cells[3],
				rp.cpuPerOp(clientName(cfg, keys, "raw")), rp.cpuPerOp(clientName(cfg, keys, "lockwatch-off")), rp.cpuPerOp(clientName(cfg, keys, "lockwatch-async")))
		}
	}
	p("\n")
	p("%s", rp.embed("cycle-clients.svg", "lockwatch's cycle time over redislock's per client configuration",
		barChart("Cycle at 16 goroutines: lockwatch ÷ redislock (time per op, lower is better)", "× redislock's time per op, same run", bars, 1.2, "goal ≤ 1.20×")))
}

// cpuPerOp is client + Redis CPU µs per op.
func (rp *report) cpuPerOp(name string) string {
	v, ok := rp.r.perRun(func(v []float64) float64 { return v[0] + v[1] }, [2]string{name, "cpu-µs/op"}, [2]string{name, "redis-µs/op"})
	return cond(ok, num(v, 1))
}

// clientGoals are issue 28's cycle goals over every client configuration:
// the worst ratio to redislock, with Release and with ReleaseAsync, and
// how many configurations met the bound.
func (rp *report) clientGoals(add func(text string, known, met bool, format string, args ...any)) {
	const bound = 1.20
	for _, impl := range []string{"lockwatch-off", "lockwatch-async"} {
		worst, where, met, n := 0.0, "", 0, 0
		for _, cfg := range clientConfigs {
			for _, keys := range clientKeys {
				x, ok := rp.clientRatio(cfg, keys, impl, "redislock")
				if !ok {
					continue
				}
				n++
				if x > worst {
					worst, where = x, cfg+", "+keys
				}
				if x <= bound {
					met++
				}
			}
		}
		release := "Release"
		if impl == "lockwatch-async" {
			release = "ReleaseAsync"
		}
		add(fmt.Sprintf("cycle, 16 goroutines, every client configuration, %s: ≤ %.2f× redislock", release, bound), n > 0, n > 0 && met == n,
			"worst %.2f× (%s); %d of %d met", worst, where, met, n)
	}
}
