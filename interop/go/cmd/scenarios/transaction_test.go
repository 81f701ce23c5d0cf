package main

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
)

// halfID is an offset message id for commit-log offset off (store 127.0.0.1:10911).
func halfID(off int64) string { return fmt.Sprintf("7F00000100002A9F%016X", off) }

// txFixture: twelve transactional messages, as the scenario plans them, all answered as planned.
// The committed ones (six) sit in two queues, offsets in commit order.
func txFixture(t0 time.Time) []*txRecord {
	var recs []*txRecord
	perQueue := map[int]int64{}
	for i := 0; i < 12; i++ {
		_, s := buildMessage(testTopic, testRun, i, "tx body "+strconv.Itoa(i), "TagTx")
		s.msgID = "UNIQ" + strconv.Itoa(i)
		s.queueID = i % 2
		r := &txRecord{sent: s, plan: txPlanFor(i), halfOffsetMsgID: halfID(int64(1000 * (i + 1))), executed: 1}
		if planChecked(r.plan) {
			r.checks = 1
			r.checkIDs = []string{s.msgID}
		}
		if planCommits(r.plan) {
			r.decidedAt = t0
			s.queueOffset = perQueue[s.queueID]
			perQueue[s.queueID]++
		}
		recs = append(recs, r)
	}
	return recs
}

// txDelivery is the committed message the consumer would get for r.
func txDelivery(r *txRecord) *primitive.MessageExt {
	m := delivery(r.sent)
	m.WithProperty(propTxPlan, r.plan)
	m.OffsetMsgId = "COMMITTED" + strconv.Itoa(r.sent.seq)
	m.SysFlag = int32(primitive.TransactionCommitType)
	m.PreparedTransactionOffset = int64(1000 * (r.sent.seq + 1))
	if r.plan == planCheckCommit {
		m.PreparedTransactionOffset += 50_000 // the check's copy
	}
	return m
}

func committedOf(recs []*txRecord) []*sentMsg {
	var out []*sentMsg
	for _, r := range recs {
		if planCommits(r.plan) {
			out = append(out, r.sent)
		}
	}
	return out
}

func values(recs []*txRecord) []txRecord {
	out := make([]txRecord, len(recs))
	for i, r := range recs {
		out[i] = *r
	}
	return out
}

func TestTxPlans(t *testing.T) {
	counts := map[string]int{}
	for i := 0; i < 60; i++ {
		counts[txPlanFor(i)]++
	}
	want := map[string]int{planCommit: 20, planRollback: 20, planCheckCommit: 10, planCheckRollback: 10}
	for k, v := range want {
		if counts[k] != v {
			t.Fatalf("plans over 60 messages: %v, want %v", counts, want)
		}
	}
}

func TestCheckTransactionsAllGood(t *testing.T) {
	t0 := time.Now()
	recs := txFixture(t0)
	c := newCollector(config{}, committedOf(recs))
	for _, r := range recs {
		if planCommits(r.plan) {
			deliverAll(c, txDelivery(r))
		}
	}
	if p := checkTransactions(c, testTopic, testRun, values(recs)); len(p) != 0 {
		t.Fatalf("unexpected problems: %q", p)
	}
}

func TestCheckTransactionsProblems(t *testing.T) {
	t0 := time.Now()
	recs := txFixture(t0)
	c := newCollector(config{}, committedOf(recs))
	for _, r := range recs {
		switch {
		case r.sent.seq == 0: // committed at once, never delivered
		case r.sent.seq == 1 || r.sent.seq == 5: // rolled back (at once, and when checked), delivered anyway
			m := txDelivery(r)
			deliverAll(c, m)
		case r.sent.seq == 2: // check-commit, delivered twice and not as a commit record
			m := txDelivery(r)
			m.SysFlag = 0
			deliverAll(c, m, m)
		case r.sent.seq == 3: // a commit record that does not point at its half message
			m := txDelivery(r)
			m.PreparedTransactionOffset = 7
			m.OffsetMsgId = r.halfOffsetMsgID
			deliverAll(c, m)
		case planCommits(r.plan):
			deliverAll(c, txDelivery(r))
		}
	}
	// #8 (check-commit) was delivered before the listener committed it.
	recs[8].decidedAt = time.Now().Add(time.Hour)
	// #11 (check-rollback) was never checked; #5's check named another transaction.
	recs[11].checks, recs[11].checkIDs = 0, nil
	recs[5].checkIDs = []string{"someone else"}
	recs[4].executed = 2

	p := checkTransactions(c, testTopic, testRun, values(recs))
	wantProblem(t, p, "missing #0 (commit), committed by the listener")
	wantProblem(t, p, "#1 (rollback) delivered though rolled back")
	wantProblem(t, p, "#5 (check-rollback) delivered though rolled back")
	wantProblem(t, p, "#2 (check-commit) delivered 2 times")
	wantProblem(t, p, "#2 (check-commit) sysFlag transaction type: got 0x0")
	wantProblem(t, p, "#3 (commit) PreparedTransactionOffset: got 7")
	wantProblem(t, p, "#3 (commit) OffsetMsgId")
	wantProblem(t, p, "#8 (check-commit) delivery time")
	wantProblem(t, p, "#11 (check-rollback): never checked by the broker")
	wantProblem(t, p, "#5 (check-rollback): a check carried transaction id \"someone else\"")
	wantProblem(t, p, "#4 (rollback): ExecuteLocalTransaction ran 2 times")
	wantProblem(t, p, "queue 0: offset 1 at position 0")
}

func TestSQLSelectorsSelectSomeOfEach(t *testing.T) {
	// Over the default 100 messages: exact sizes, so a change to sqlProps is noticed.
	want := []int{14, 70, 23}
	for k, sel := range sqlSelectors {
		n := 0
		for i := 0; i < 100; i++ {
			a, hasA, region, tag := sqlProps(i)
			av, _ := strconv.Atoi(a)
			if sel.match(av, hasA, region, tag) {
				n++
			}
		}
		if n != want[k] {
			t.Errorf("selector %q selects %d of 100, want %d", sel.expr, n, want[k])
		}
	}
}
