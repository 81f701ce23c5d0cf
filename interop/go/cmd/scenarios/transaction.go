package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// propTxPlan tells the transaction listener what to answer for a message.
const propTxPlan = "interopTxPlan"

// What the listener answers for a message: commit or roll back at once (ExecuteLocalTransaction),
// or answer "unknown" at once and commit or roll back when the broker asks (CheckLocalTransaction).
const (
	planCommit        = "commit"
	planRollback      = "rollback"
	planCheckCommit   = "check-commit"
	planCheckRollback = "check-rollback"
)

// txPlanFor splits the messages into thirds (commit, rollback, unknown) and the unknown third into
// halves (committed, rolled back when checked).
func txPlanFor(seq int) string {
	switch seq % 3 {
	case 0:
		return planCommit
	case 1:
		return planRollback
	}
	if (seq/3)%2 == 0 {
		return planCheckCommit
	}
	return planCheckRollback
}

func planCommits(plan string) bool { return plan == planCommit || plan == planCheckCommit }
func planChecked(plan string) bool { return plan == planCheckCommit || plan == planCheckRollback }

// txRecord is one transactional message: how it was sent and what the listener did with it.
type txRecord struct {
	sent            *sentMsg // msgID: SendResult.MsgID (the client's UNIQ_KEY); queueID: the real queue
	plan            string
	halfOffsetMsgID string // SendResult.OffsetMsgID: the half record
	halfQueueOffset int64  // SendResult.QueueOffset: its offset in the half queue
	sendTxID        string // SendResult.TransactionID: the send response's transactionId field
	state           primitive.LocalTransactionState
	executed        int       // ExecuteLocalTransaction calls
	checks          int       // CheckLocalTransaction calls
	checkIDs        []string  // the transaction id (UNIQ_KEY) each check carried
	decidedAt       time.Time // when the listener answered commit, zero if it never did
}

// txListener is the producer's TransactionListener. Messages are told apart by body.
type txListener struct {
	topic, run string
	mu         sync.Mutex
	recs       map[string]*txRecord
	problems   []string // checks that did not look right
	pending    int      // checked-plan messages not answered by a check yet
	allChecked chan struct{}
}

func newTxListener(topic, run string) *txListener {
	return &txListener{topic: topic, run: run, recs: map[string]*txRecord{}, allChecked: make(chan struct{})}
}

// expect registers a message before it is sent (ExecuteLocalTransaction runs inside the send).
func (l *txListener) expect(r *txRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs[r.sent.body] = r
	if planChecked(r.plan) {
		l.pending++
	}
}

// noMoreSends closes allChecked at once when nothing is waiting for a check.
func (l *txListener) noMoreSends() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == 0 {
		close(l.allChecked)
	}
}

func (l *txListener) ExecuteLocalTransaction(m *primitive.Message) primitive.LocalTransactionState {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.recs[string(m.Body)]
	if !ok {
		l.problems = append(l.problems, fmt.Sprintf("ExecuteLocalTransaction for a message this run did not send: %q", short(string(m.Body))))
		return primitive.RollbackMessageState
	}
	r.executed++
	switch r.plan {
	case planCommit:
		if r.decidedAt.IsZero() {
			r.decidedAt = now
		}
		return primitive.CommitMessageState
	case planRollback:
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

func (l *txListener) CheckLocalTransaction(m *primitive.MessageExt) primitive.LocalTransactionState {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.recs[string(m.Body)]
	if !ok {
		l.problems = append(l.problems, fmt.Sprintf("check for a message this run did not send: topic %s body %q", m.Topic, short(string(m.Body))))
		return primitive.RollbackMessageState
	}
	r.checks++
	r.checkIDs = append(r.checkIDs, m.TransactionId)
	// The check carries the half message with its real topic and the producer's properties.
	seq := r.sent.seq
	if m.Topic != l.topic {
		l.problems = append(l.problems, fmt.Sprintf("check of #%d: topic %q, want the real topic %q", seq, m.Topic, l.topic))
	}
	for name, want := range map[string]string{propSeq: strconv.Itoa(seq), propRun: l.run, propTxPlan: r.plan} {
		if got := m.GetProperty(name); got != want {
			l.problems = append(l.problems, fmt.Sprintf("check of #%d: property %s %q, want %q", seq, name, got, want))
		}
	}
	if m.GetKeys() != r.sent.keys {
		l.problems = append(l.problems, fmt.Sprintf("check of #%d: keys %q, want %q", seq, m.GetKeys(), r.sent.keys))
	}
	if planChecked(r.plan) && r.checks == 1 {
		l.pending--
		if l.pending == 0 {
			close(l.allChecked)
		}
	}
	if planCommits(r.plan) {
		if r.decidedAt.IsZero() {
			r.decidedAt = now
		}
		return primitive.CommitMessageState
	}
	return primitive.RollbackMessageState
}

func wantState(plan string) primitive.LocalTransactionState {
	switch plan {
	case planCommit:
		return primitive.CommitMessageState
	case planRollback:
		return primitive.RollbackMessageState
	}
	return primitive.UnkonwnState
}

// sendInTransaction sends one half message; the listener decides inside the call.
func sendInTransaction(p rocketmq.TransactionProducer, m *primitive.Message, r *txRecord) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.SendMessageInTransaction(ctx, m)
	if err != nil {
		return fmt.Errorf("send #%d (%s): error %v", r.sent.seq, r.plan, err)
	}
	if res.SendResult == nil || res.Status != primitive.SendOK {
		return fmt.Errorf("send #%d: %v, want SendOK", r.sent.seq, res.SendResult)
	}
	if res.MsgID == "" || res.OffsetMsgID == "" || res.MessageQueue == nil {
		return fmt.Errorf("send #%d: SendResult lacks MsgID, OffsetMsgID or queue (%s)", r.sent.seq, res.SendResult)
	}
	if res.State != wantState(r.plan) {
		return fmt.Errorf("send #%d: local transaction state %d, want %d", r.sent.seq, res.State, wantState(r.plan))
	}
	if r.sent.seq < dumpSends {
		fmt.Printf("  sent half #%d (%s): %s transactionId=%q\n", r.sent.seq, r.plan, res.SendResult, res.TransactionID)
	}
	r.sent.msgID = res.MsgID
	r.sent.queueID = res.MessageQueue.QueueId
	r.halfOffsetMsgID, r.halfQueueOffset = res.OffsetMsgID, res.QueueOffset
	r.state = res.State
	r.sendTxID = res.TransactionID
	return nil
}

func transaction(cfg config) (string, []string) {
	run := newRunID()
	topic := "GoInteropTX_" + run
	group := "GoInteropTxPG_" + run
	details := "topic=" + topic
	l := newTxListener(topic, run)
	p, err := rocketmq.NewTransactionProducer(l,
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{cfg.namesrv})),
		producer.WithGroupName(group),
		// A client instance of its own: the client registers the handler of broker checks, with
		// its producer group, only in the first producer or consumer of an instance.
		producer.WithInstanceName("GoInteropTx_"+run),
		producer.WithRetry(2),
		producer.WithTls(cfg.tls),
	)
	if err != nil {
		return details, []string{fmt.Sprintf("NewTransactionProducer: %v", err)}
	}
	if err := p.Start(); err != nil {
		return details, []string{fmt.Sprintf("transaction producer Start: %v", err)}
	}
	// The producer must outlive the consumer: the broker's checks go to it.
	defer func() {
		if msg := shutdown("transaction producer", p.Shutdown); msg != "" {
			fmt.Println("  note: " + msg)
		}
	}()

	var problems []string
	var recs, committed []*txRecord
	var want []*sentMsg
	perPlan := map[string]int{}
	// The client logs an error for every local transaction that does not commit at once
	// ("executeLocalTransaction but state unexpected"): two thirds of them here, on purpose.
	if !cfg.verbose {
		rlog.SetLogLevel("fatal")
	}
	sendStart := time.Now()
	for i := 0; i < cfg.count; i++ {
		plan := txPlanFor(i)
		m, s := buildMessage(topic, run, i, fmt.Sprintf("go-interop %s tx %s #%03d", run, plan, i), "TagTx")
		m.WithProperty(propTxPlan, plan)
		r := &txRecord{sent: s, plan: plan}
		l.expect(r)
		if err := sendInTransaction(p, m, r); err != nil {
			problems = append(problems, err.Error())
			if len(problems) >= 10 && len(recs) == 0 {
				return details, append(problems, "giving up sending: no send succeeded")
			}
			continue
		}
		recs = append(recs, r)
		perPlan[plan]++
		if planCommits(plan) {
			committed = append(committed, r)
			want = append(want, s)
		}
	}
	l.noMoreSends()
	if !cfg.verbose {
		rlog.SetLogLevel("error")
	}
	details += fmt.Sprintf(" sent=%d (commit:%d rollback:%d unknown:%d of which check-commit:%d check-rollback:%d) send=%s",
		len(recs), perPlan[planCommit], perPlan[planRollback], perPlan[planCheckCommit]+perPlan[planCheckRollback],
		perPlan[planCheckCommit], perPlan[planCheckRollback], time.Since(sendStart).Round(time.Millisecond))
	if len(want) == 0 {
		return details, append(problems, "no message to be committed was sent")
	}

	// The consumer runs while the broker checks the unknown ones, and until every one of them
	// has been checked.
	c := newCollector(cfg, want)
	st, cp := consumeAll(cfg, topic, "GoInteropTxCG_"+run, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, c, l.allChecked)
	problems = append(problems, cp...)

	l.mu.Lock()
	problems = append(problems, l.problems...)
	l.mu.Unlock()
	problems = append(problems, checkTransactions(c, topic, run, l.snapshot(recs))...)
	checks, checked, extra, maxChecks := checkSummary(l.snapshot(recs))
	details += " committedKeep=" + keptTxProperties(c)
	// Apache 5.3.3 answers every send with transactionId = the message's UNIQ_KEY; the client
	// copies it into SendResult.TransactionID and into the END_TRANSACTION it sends next. Without
	// it both are empty (the transaction still resolves: the broker goes by the offsets). Reported,
	// not checked.
	withTxID := 0
	for _, r := range recs {
		if r.sendTxID != "" && r.sendTxID == r.sent.msgID {
			withTxID++
		}
	}
	details += fmt.Sprintf(" sendResultTransactionId=%d/%d", withTxID, len(recs))
	if withTxID < len(recs) {
		fmt.Printf("  note: %d of %d half-message SendResults had no TransactionID equal to their MsgID (the broker's send response lacked transactionId)\n",
			len(recs)-withTxID, len(recs))
	}
	details += fmt.Sprintf(" expected=%d received=%d checks=%d (messages checked:%d, of resolved ones:%d, max per message:%d) callbacks=%d firstDelivery=%s allDelivered=%s",
		len(want), len(c.got), checks, checked, extra, maxChecks, st.calls, st.startup.Round(time.Millisecond), st.all.Round(time.Millisecond))
	return details, problems
}

// snapshot copies the records under the listener's lock.
func (l *txListener) snapshot(recs []*txRecord) []txRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]txRecord, len(recs))
	for i, r := range recs {
		out[i] = *r
		out[i].checkIDs = append([]string(nil), r.checkIDs...)
	}
	return out
}

func checkSummary(recs []txRecord) (checks, checked, ofResolved, maxPer int) {
	for _, r := range recs {
		checks += r.checks
		if r.checks > 0 {
			checked++
			if !planChecked(r.plan) {
				ofResolved++
			}
		}
		if r.checks > maxPer {
			maxPer = r.checks
		}
	}
	return
}

// checkTransactions compares the deliveries with the transactions: exactly the committed
// messages (at once or when checked), each once, never before the listener committed it, with
// the producer's body, keys, tag, properties, unique id and queue, stored as a new record with the
// commit type and a link to its half record; no rolled-back message; every unknown one checked,
// with the transaction id the send returned.
func checkTransactions(c *collector, topic, run string, recs []txRecord) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var problems []string
	problems = append(problems, c.inCall...)
	sort.Slice(recs, func(i, j int) bool { return recs[i].sent.seq < recs[j].sent.seq })
	byBody := map[string]*txRecord{}
	for i := range recs {
		byBody[recs[i].sent.body] = &recs[i]
	}

	byQueue := map[int][]*recvMsg{}
	for i := range recs {
		r := &recs[i]
		s := r.sent
		if r.executed != 1 {
			problems = append(problems, fmt.Sprintf("#%d (%s): ExecuteLocalTransaction ran %d times, want once", s.seq, r.plan, r.executed))
		}
		if planChecked(r.plan) && r.checks == 0 {
			problems = append(problems, fmt.Sprintf("#%d (%s): never checked by the broker", s.seq, r.plan))
		}
		for _, id := range r.checkIDs {
			if id != s.msgID {
				problems = append(problems, fmt.Sprintf("#%d (%s): a check carried transaction id %q, want the send's MsgID %q", s.seq, r.plan, id, s.msgID))
				break
			}
		}
		if !planCommits(r.plan) {
			continue // deliveries of these are in c.stray
		}
		rs := c.got[s.body]
		if len(rs) == 0 {
			if r.decidedAt.IsZero() {
				problems = append(problems, fmt.Sprintf("missing #%d (%s): never committed by the listener", s.seq, r.plan))
			} else {
				problems = append(problems, fmt.Sprintf("missing #%d (%s), committed by the listener", s.seq, r.plan))
			}
			continue
		}
		if len(rs) > 1 {
			var where []string
			for _, d := range rs {
				where = append(where, fmt.Sprintf("queue %d offset %d reconsume %d", d.queueID, d.queueOffset, d.reconsumeTimes))
			}
			problems = append(problems, fmt.Sprintf("#%d (%s) delivered %d times: %s", s.seq, r.plan, len(rs), strings.Join(where, "; ")))
		}
		d := rs[0]
		byQueue[d.queueID] = append(byQueue[d.queueID], d)
		diff := func(field string, got, want interface{}) {
			problems = append(problems, fmt.Sprintf("#%d (%s) %s: got %v, want %v", s.seq, r.plan, field, got, want))
		}
		if r.decidedAt.IsZero() {
			diff("delivery", "delivered", "none: the listener never committed it")
		} else {
			for _, e := range rs {
				if e.at.Before(r.decidedAt) {
					diff("delivery time", e.at.Format("15:04:05.000"), "after the commit at "+r.decidedAt.Format("15:04:05.000"))
					break
				}
			}
		}
		if d.topic != topic {
			diff("topic", d.topic, topic)
		}
		if d.keys != s.keys {
			diff("keys", strconv.Quote(d.keys), strconv.Quote(s.keys))
		}
		if d.tag != s.tag {
			diff("tag", strconv.Quote(d.tag), strconv.Quote(s.tag))
		}
		for name, want := range map[string]string{propSeq: strconv.Itoa(s.seq), propRun: run, propTxPlan: r.plan} {
			if v := d.props[name]; v != want {
				diff("property "+name, strconv.Quote(v), strconv.Quote(want))
			}
		}
		if d.msgID != s.msgID {
			diff("MsgId", d.msgID, s.msgID+" (from SendResult)")
		}
		if d.queueID != s.queueID {
			diff("queue id", d.queueID, fmt.Sprintf("%d (the queue the half message was sent to)", s.queueID))
		}
		if d.offsetMsgID == "" || d.offsetMsgID == r.halfOffsetMsgID {
			diff("OffsetMsgId", strconv.Quote(d.offsetMsgID), "a new record, not the half one "+r.halfOffsetMsgID)
		}
		// PreparedTransactionOffset names the half record that was committed: the one sent, or
		// for a commit answering a check, the copy the broker appended for that check.
		if half, err := primitive.UnmarshalMsgID([]byte(r.halfOffsetMsgID)); err != nil {
			diff("half OffsetMsgID", r.halfOffsetMsgID, "a decodable offset message id")
		} else if r.plan == planCommit && d.preparedTxOff != half.Offset {
			diff("PreparedTransactionOffset", d.preparedTxOff, fmt.Sprintf("%d (the half record's, from its OffsetMsgID)", half.Offset))
		} else if r.plan == planCheckCommit && d.preparedTxOff < half.Offset {
			diff("PreparedTransactionOffset", d.preparedTxOff, fmt.Sprintf(">= %d (the half record or a later copy)", half.Offset))
		}
		if t := int(d.sysFlag) & primitive.TransactionRollbackType; t != primitive.TransactionCommitType {
			diff("sysFlag transaction type", fmt.Sprintf("0x%x", t), fmt.Sprintf("0x%x (commit)", primitive.TransactionCommitType))
		}
		if d.reconsumeTimes != 0 {
			diff("ReconsumeTimes", d.reconsumeTimes, 0)
		}
		if d.sysFlag&primitive.FlagCompressed == 0 {
			if want := int32(crc32.ChecksumIEEE([]byte(d.body)) & 0x7fffffff); d.bodyCRC != want {
				diff("BodyCRC", d.bodyCRC, want)
			}
		}
		if d.bornTimestamp <= 0 || d.storeTimestamp <= 0 {
			diff("born/store timestamps", fmt.Sprintf("%d/%d", d.bornTimestamp, d.storeTimestamp), "both > 0")
		}
	}
	for i, d := range c.stray {
		if i == 10 {
			problems = append(problems, fmt.Sprintf("... %d more unexpected deliveries", len(c.stray)-10))
			break
		}
		if r, ok := byBody[d.body]; ok {
			problems = append(problems, fmt.Sprintf("#%d (%s) delivered though rolled back (queue %d offset %d)", r.sent.seq, r.plan, d.queueID, d.queueOffset))
			continue
		}
		problems = append(problems, fmt.Sprintf("unexpected delivery %q (topic %s, queue %d offset %d)", short(d.body), d.topic, d.queueID, d.queueOffset))
	}
	// Only committed messages reach the topic, so per queue the offsets run from 0 without holes,
	// in the order of the commits.
	queues := make([]int, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	sort.Ints(queues)
	for _, q := range queues {
		ds := byQueue[q]
		sort.Slice(ds, func(i, j int) bool { return ds[i].queueOffset < ds[j].queueOffset })
		for i, d := range ds {
			if d.queueOffset != int64(i) {
				problems = append(problems, fmt.Sprintf("queue %d: offset %d at position %d (want contiguous offsets from 0)", q, d.queueOffset, i))
				break
			}
		}
	}
	return problems
}

// keptTxProperties lists which of the half message's properties (TRAN_MSG, REAL_TOPIC, REAL_QID,
// PGROUP) the delivered committed messages still carry: Apache 5.3.3 keeps them all, a broker may
// drop them. Not a check, only reported.
func keptTxProperties(c *collector) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	names := []string{primitive.PropertyTransactionPrepared, primitive.PropertyRealTopic, primitive.PropertyRealQueueId, primitive.PropertyProducerGroup}
	counts := make([]int, len(names))
	total := 0
	for _, rs := range c.got {
		total++
		for i, n := range names {
			if _, ok := rs[0].props[n]; ok {
				counts[i]++
			}
		}
	}
	var parts []string
	for i, n := range names {
		if counts[i] > 0 {
			parts = append(parts, fmt.Sprintf("%s:%d/%d", n, counts[i], total))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}
