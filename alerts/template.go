package alerts

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"text/template"
)

// expand renders an annotation template the way Prometheus does for an
// alert with the given labels and value: the same variable prelude and the
// same formatting functions. It writes the annotations the promtool tests
// expect; promtool itself proves that the two renderings agree.
func expand(text string, labels map[string]string, value float64) (string, error) {
	const prelude = "{{$labels := .Labels}}{{$value := .Value}}"
	t, err := template.New("annotation").Option("missingkey=zero").Funcs(template.FuncMap{
		"humanize":           humanize,
		"humanizePercentage": func(v float64) string { return fmt.Sprintf("%.4g%%", v*100) },
		"humanizeDuration":   humanizeDuration,
	}).Parse(prelude + text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = t.Execute(&b, struct {
		Labels map[string]string
		Value  float64
	}{labels, value})
	return b.String(), err
}

// humanize writes a number with an SI prefix and 4 significant digits.
func humanize(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4g", v)
	}
	prefixes, step := []string{"k", "M", "G", "T", "P", "E", "Z", "Y"}, 1000.0
	if math.Abs(v) < 1 {
		prefixes, step = []string{"m", "u", "n", "p", "f", "a", "z", "y"}, 1/1000.0
	}
	prefix := ""
	for _, p := range prefixes {
		if (step > 1 && math.Abs(v) < 1000) || (step < 1 && math.Abs(v) >= 1) {
			break
		}
		prefix = p
		v /= step
	}
	return fmt.Sprintf("%.4g%s", v, prefix)
}

// humanizeDuration writes seconds as a duration: "2.425s", "1m 30s", "3ms".
func humanizeDuration(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprintf("%.4g", v)
	}
	if v == 0 {
		return fmt.Sprintf("%.4gs", v)
	}
	if math.Abs(v) >= 1 {
		sign := ""
		if v < 0 {
			sign, v = "-", -v
		}
		d := int64(v)
		seconds, minutes, hours, days := d%60, (d/60)%60, (d/3600)%24, d/86400
		switch {
		case days != 0:
			return fmt.Sprintf("%s%dd %dh %dm %ds", sign, days, hours, minutes, seconds)
		case hours != 0:
			return fmt.Sprintf("%s%dh %dm %ds", sign, hours, minutes, seconds)
		case minutes != 0:
			return fmt.Sprintf("%s%dm %ds", sign, minutes, seconds)
		}
		return fmt.Sprintf("%s%.4gs", sign, v)
	}
	prefix := ""
	for _, p := range []string{"m", "u", "n", "p", "f", "a", "z", "y"} {
		if math.Abs(v) >= 1 {
			break
		}
		prefix = p
		v *= 1000
	}
	return fmt.Sprintf("%.4g%ss", v, prefix)
}

// valueVar is $value in a Prometheus template.
var valueVar = regexp.MustCompile(`\$value\b`)

// grafanaTemplate rewrites a Prometheus annotation template for Grafana
// Alerting, where $value lists every query's value and the value compared
// with the threshold is that of the reduce step, $values.B.Value.
func grafanaTemplate(text string) string {
	return valueVar.ReplaceAllString(text, "$$values."+refReduce+".Value")
}
