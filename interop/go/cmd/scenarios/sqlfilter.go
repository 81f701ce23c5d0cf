package main

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
)

// sqlProps gives message seq its user properties for sql-filter: `a` (0..9, absent on every
// eighth message) and `region`; its tag alternates TagA/TagB.
func sqlProps(seq int) (a string, hasA bool, region, tag string) {
	region = []string{"eu", "us", "ap"}[seq%3]
	tag = []string{"TagA", "TagB"}[seq%2]
	if seq%8 == 7 {
		return "", false, region, tag
	}
	return strconv.Itoa(seq % 10), true, region, tag
}

// sqlSelector is one SQL92 subscription and, written out in Go, which messages it must select.
// A comparison with a missing property is NULL, and NULL (NOT NULL too) selects nothing.
type sqlSelector struct {
	expr  string
	match func(a int, hasA bool, region, tag string) bool
}

var sqlSelectors = []sqlSelector{
	{"region = 'eu' AND a >= 5", func(a int, hasA bool, region, _ string) bool {
		return hasA && region == "eu" && a >= 5
	}},
	{"a IS NULL OR region IN ('us', 'ap')", func(_ int, hasA bool, region, _ string) bool {
		return !hasA || region == "us" || region == "ap"
	}},
	{"TAGS = 'TagB' AND NOT (a BETWEEN 2 AND 6)", func(a int, hasA bool, _, tag string) bool {
		return hasA && tag == "TagB" && (a < 2 || a > 6)
	}},
}

func sqlFilter(cfg config) (string, []string) {
	run := newRunID()
	topic := "GoInteropSQL_" + run
	details := "topic=" + topic
	p, err := newProducer(cfg, "GoInteropPG_"+run)
	if err != nil {
		return details, []string{err.Error()}
	}
	defer func() {
		if msg := shutdown("producer", p.Shutdown); msg != "" {
			fmt.Println("  note: " + msg)
		}
	}()

	var problems []string
	var sent []*sentMsg
	wants := make([][]*sentMsg, len(sqlSelectors))
	sendStart := time.Now()
	for i := 0; i < cfg.count; i++ {
		a, hasA, region, tag := sqlProps(i)
		m, s := buildMessage(topic, run, i, fmt.Sprintf("go-interop %s sql a=%s region=%s #%03d", run, a, region, i), tag)
		if hasA {
			m.WithProperty("a", a)
		}
		m.WithProperty("region", region)
		if err := sendOne(p, m, s); err != nil {
			problems = append(problems, err.Error())
			if len(problems) >= 10 && len(sent) == 0 {
				return details, append(problems, "giving up sending: no send succeeded")
			}
			continue
		}
		sent = append(sent, s)
		av, _ := strconv.Atoi(a)
		for k, sel := range sqlSelectors {
			if sel.match(av, hasA, region, tag) {
				wants[k] = append(wants[k], s)
			}
		}
	}
	details += fmt.Sprintf(" sent=%d queues=%s send=%s", len(sent), queueSummary(sent), time.Since(sendStart).Round(time.Millisecond))
	for k, w := range wants {
		if len(w) == 0 || len(w) == len(sent) {
			problems = append(problems, fmt.Sprintf("selector %q would select %d of %d messages: use a larger --count", sqlSelectors[k].expr, len(w), len(sent)))
		}
	}
	if len(problems) > 0 {
		return details, problems
	}

	// One push consumer (group) per selector, all at once. Messages a selector must not select
	// are not expected by its collector: any delivery of one is reported as unexpected.
	type outcome struct {
		st       consumeStats
		problems []string
		c        *collector
	}
	outs := make([]outcome, len(sqlSelectors))
	var wg sync.WaitGroup
	for k := range sqlSelectors {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			c := newCollector(cfg, wants[k])
			group := fmt.Sprintf("GoInteropSqlCG%d_%s", k, run)
			st, cp := consumeAll(cfg, topic, group, consumer.MessageSelector{Type: consumer.SQL92, Expression: sqlSelectors[k].expr}, c)
			outs[k] = outcome{st: st, problems: append(cp, c.check(topic, run, false)...), c: c}
		}(k)
	}
	wg.Wait()
	var parts []string
	for k, o := range outs {
		for _, p := range o.problems {
			problems = append(problems, fmt.Sprintf("[%s] %s", sqlSelectors[k].expr, p))
		}
		o.c.mu.Lock()
		parts = append(parts, fmt.Sprintf("%q expected=%d received=%d stray=%d allDelivered=%s",
			sqlSelectors[k].expr, len(wants[k]), len(o.c.got), len(o.c.stray), o.st.all.Round(time.Millisecond)))
		o.c.mu.Unlock()
	}
	details += " selectors: " + strings.Join(parts, "; ")
	return details, problems
}
