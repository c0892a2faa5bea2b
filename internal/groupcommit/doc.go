// Package groupcommit sends script calls in shared pipelines, one lane per
// Redis master: a call goes alone while few pipelines are in flight and
// joins the next shared pipeline otherwise (Lane says how, and how long
// each caller waits).
package groupcommit
