package redistest

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// parseInfo turns INFO or CLUSTER INFO output into a map, because the
// helpers only ever need a few fields and their position is not stable
// across Redis versions.
func parseInfo(info string) map[string]string {
	fields := make(map[string]string)
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = v
		}
	}
	return fields
}

// waitInfo polls INFO section until cond holds, because replication state
// changes asynchronously after the command that triggers it returns.
func (s *Server) waitInfo(ctx context.Context, section string, cond func(map[string]string) bool) error {
	var last map[string]string
	for {
		reply, err := s.Do(ctx, "INFO", section)
		if err == nil {
			text, _ := reply.(string)
			last = parseInfo(text)
			if cond(last) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("redistest: %s: waiting for INFO %s: %w", s.Addr(), section, err)
			}
			return fmt.Errorf("redistest: %s: INFO %s never reached the expected state; last: %v", s.Addr(), section, last)
		case <-time.After(pollInterval):
		}
	}
}

// Role is the role s reports in INFO replication ("master" or "slave"), or
// "" when it does not answer.
func (s *Server) Role(ctx context.Context) string {
	reply, err := s.Do(ctx, "INFO", "replication")
	if err != nil {
		return ""
	}
	text, _ := reply.(string)
	return parseInfo(text)["role"]
}
