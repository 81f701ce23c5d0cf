package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
)

const (
	propSeq = "interopSeq"
	propRun = "interopRun"
	// sendTimeout bounds one SendSync call, retries included.
	sendTimeout = 15 * time.Second
	// shutdownTimeout bounds a client's Shutdown.
	shutdownTimeout = 30 * time.Second
)

// sentMsg is one message as sent, with what the broker answered for it.
type sentMsg struct {
	seq         int // send order over the whole scenario
	body        string
	keys        string // as the client stores them: space separated
	tag         string // "" for none
	batch       bool
	msgID       string // SendResult.MsgID ("" for batch members, see sendBatch)
	offsetMsgID string
	queueID     int
	queueOffset int64
}

// recvMsg is one delivery to the consumer's callback.
type recvMsg struct {
	call           int // which callback invocation delivered it
	topic          string
	body           string
	keys           string
	tag            string
	props          map[string]string
	msgID          string
	offsetMsgID    string
	queueID        int
	queueOffset    int64
	reconsumeTimes int32
	bornTimestamp  int64
	storeTimestamp int64
	sysFlag        int32
	bodyCRC        int32
	preparedTxOff  int64     // PreparedTransactionOffset: the half record's commit-log offset for a committed transaction
	at             time.Time // when the callback got it
}

// dumpSends is how many SendResults to print (--dump).
var dumpSends int

// describeMessage renders every field of a delivered message, properties sorted (--dump).
func describeMessage(m *primitive.MessageExt) string {
	props := m.GetProperties()
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	var pb strings.Builder
	for i, k := range names {
		if i > 0 {
			pb.WriteString(" ")
		}
		fmt.Fprintf(&pb, "%s=%q", k, props[k])
	}
	body := short(string(m.Body))
	queue := -1
	if m.Queue != nil {
		queue = m.Queue.QueueId
	}
	return fmt.Sprintf("topic=%s queue=%d queueOffset=%d msgId=%s offsetMsgId=%s storeSize=%d bodyCRC=%d flag=%d sysFlag=%d "+
		"bornTimestamp=%d bornHost=%s storeTimestamp=%d storeHost=%s commitLogOffset=%d reconsumeTimes=%d preparedTxOffset=%d "+
		"body=%q properties{%s}",
		m.Topic, queue, m.QueueOffset, m.MsgId, m.OffsetMsgId, m.StoreSize, m.BodyCRC, m.Flag, m.SysFlag,
		m.BornTimestamp, m.BornHost, m.StoreTimestamp, m.StoreHost, m.CommitLogOffset, m.ReconsumeTimes,
		m.PreparedTransactionOffset, body, pb.String())
}

func newRunID() string {
	return fmt.Sprintf("%d%05d", time.Now().UnixMilli()%1_000_000_000, os.Getpid()%100_000)
}

func newProducer(cfg config, group string) (rocketmq.Producer, error) {
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(primitive.NewPassthroughResolver([]string{cfg.namesrv})),
		producer.WithGroupName(group),
		producer.WithRetry(2),
		producer.WithTls(cfg.tls),
	)
	if err != nil {
		return nil, fmt.Errorf("NewProducer: %w", err)
	}
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("producer Start: %w", err)
	}
	return p, nil
}

func shutdown(what string, f func() error) string {
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Sprintf("%s Shutdown: %v", what, err)
		}
		return ""
	case <-time.After(shutdownTimeout):
		return fmt.Sprintf("%s Shutdown did not return within %s", what, shutdownTimeout)
	}
}

func buildMessage(topic, run string, seq int, body, tag string) (*primitive.Message, *sentMsg) {
	m := primitive.NewMessage(topic, []byte(body))
	keys := []string{fmt.Sprintf("k%s-%d", run, seq), fmt.Sprintf("seq-%d", seq)}
	m.WithKeys(keys)
	if tag != "" {
		m.WithTag(tag)
	}
	m.WithProperty(propSeq, strconv.Itoa(seq))
	m.WithProperty(propRun, run)
	return m, &sentMsg{seq: seq, body: body, keys: strings.Join(keys, " "), tag: tag}
}

// sendOne sends one message synchronously and checks its SendResult.
func sendOne(p rocketmq.Producer, m *primitive.Message, s *sentMsg) error {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.SendSync(ctx, m)
	if err != nil {
		return fmt.Errorf("send #%d (%s): error %v", s.seq, s.tag, err)
	}
	if res.Status != primitive.SendOK {
		return fmt.Errorf("send #%d: status %d, want SendOK (%s)", s.seq, res.Status, res)
	}
	var missing []string
	if res.MsgID == "" {
		missing = append(missing, "MsgID")
	}
	if res.OffsetMsgID == "" {
		missing = append(missing, "OffsetMsgID")
	}
	if res.MessageQueue == nil {
		missing = append(missing, "MessageQueue")
	}
	if len(missing) > 0 {
		return fmt.Errorf("send #%d: SendResult has no %s (%s)", s.seq, strings.Join(missing, ", "), res)
	}
	if res.MessageQueue.Topic != m.Topic {
		return fmt.Errorf("send #%d: SendResult queue topic %q, want %q", s.seq, res.MessageQueue.Topic, m.Topic)
	}
	if s.seq < dumpSends {
		fmt.Printf("  sent #%d: %s regionID=%q traceOn=%v\n", s.seq, res, res.RegionID, res.TraceOn)
	}
	s.msgID, s.offsetMsgID = res.MsgID, res.OffsetMsgID
	s.queueID, s.queueOffset = res.MessageQueue.QueueId, res.QueueOffset
	return nil
}

// sendBatch sends several messages in one SendSync (one SEND_BATCH_MESSAGE request). The client
// (v2.1.x) gives batch members no client-side id, so SendResult.MsgID is empty; OffsetMsgID is the
// broker's comma-separated list with one id per member, and QueueOffset is the first member's.
func sendBatch(p rocketmq.Producer, ms []*primitive.Message, ss []*sentMsg) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.SendSync(ctx, ms...)
	if err != nil {
		return "", fmt.Errorf("batch send of %d: error %v", len(ms), err)
	}
	if res.Status != primitive.SendOK {
		return "", fmt.Errorf("batch send: status %d, want SendOK (%s)", res.Status, res)
	}
	if res.MessageQueue == nil {
		return "", fmt.Errorf("batch send: SendResult has no MessageQueue (%s)", res)
	}
	if dumpSends > 0 {
		fmt.Printf("  sent batch: %s regionID=%q traceOn=%v\n", res, res.RegionID, res.TraceOn)
	}
	ids := strings.Split(res.OffsetMsgID, ",")
	if res.OffsetMsgID == "" || len(ids) != len(ms) {
		return "", fmt.Errorf("batch send: OffsetMsgID %q holds %d ids, want %d", res.OffsetMsgID, len(ids), len(ms))
	}
	for j, s := range ss {
		s.batch = true
		s.msgID = res.MsgID
		s.offsetMsgID = ids[j]
		s.queueID = res.MessageQueue.QueueId
		s.queueOffset = res.QueueOffset + int64(j)
	}
	note := "batchMsgID=" + res.MsgID
	if res.MsgID == "" {
		note = "batchMsgID=none"
	}
	return note, nil
}

// collector records every delivery to the push consumer's callback.
type collector struct {
	mu        sync.Mutex
	expected  map[string]*sentMsg
	got       map[string][]*recvMsg
	stray     []*recvMsg
	inCall    []string // order problems inside one callback invocation
	calls     int
	remaining int
	allIn     chan struct{}
	firstAt   time.Time
	lastAt    time.Time
	dump      int // how many more deliveries to describe in full (--dump)
}

func newCollector(cfg config, expected []*sentMsg) *collector {
	c := &collector{
		dump:      cfg.dump,
		expected:  make(map[string]*sentMsg, len(expected)),
		got:       make(map[string][]*recvMsg),
		remaining: len(expected),
		allIn:     make(chan struct{}),
	}
	for _, s := range expected {
		c.expected[s.body] = s
	}
	if c.remaining == 0 {
		close(c.allIn)
	}
	return c
}

func (c *collector) consume(_ context.Context, msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	if c.firstAt.IsZero() {
		c.firstAt = now
	}
	c.lastAt = now
	lastOffset := map[int]int64{}
	for _, m := range msgs {
		r := &recvMsg{
			call:           c.calls,
			topic:          m.Topic,
			body:           string(m.Body),
			keys:           m.GetKeys(),
			tag:            m.GetTags(),
			props:          m.GetProperties(),
			msgID:          m.MsgId,
			offsetMsgID:    m.OffsetMsgId,
			queueOffset:    m.QueueOffset,
			reconsumeTimes: m.ReconsumeTimes,
			bornTimestamp:  m.BornTimestamp,
			storeTimestamp: m.StoreTimestamp,
			sysFlag:        m.SysFlag,
			bodyCRC:        m.BodyCRC,
			preparedTxOff:  m.PreparedTransactionOffset,
			at:             now,
			queueID:        -1,
		}
		if m.Queue != nil {
			r.queueID = m.Queue.QueueId
		}
		if c.dump > 0 {
			c.dump--
			fmt.Printf("  received: %s\n", describeMessage(m))
		}
		if prev, ok := lastOffset[r.queueID]; ok && r.queueOffset <= prev {
			c.inCall = append(c.inCall, fmt.Sprintf("callback %d: queue %d offset %d delivered after offset %d",
				c.calls, r.queueID, r.queueOffset, prev))
		}
		lastOffset[r.queueID] = r.queueOffset
		if _, ok := c.expected[r.body]; !ok {
			c.stray = append(c.stray, r)
			continue
		}
		c.got[r.body] = append(c.got[r.body], r)
		if len(c.got[r.body]) == 1 {
			c.remaining--
			if c.remaining == 0 {
				close(c.allIn)
			}
		}
	}
	return consumer.ConsumeSuccess, nil
}

type consumeStats struct {
	startup time.Duration // consumer Start until the first delivery
	all     time.Duration // consumer Start until the last expected message
	calls   int
}

// consumeAll runs a push consumer on topic until every expected message has arrived and every
// channel in also is closed (bounded by cfg.timeout), keeps it running for cfg.grace to catch
// duplicates and strays, and shuts it down.
func consumeAll(cfg config, topic, group string, sel consumer.MessageSelector, c *collector, also ...<-chan struct{}) (consumeStats, []string) {
	var st consumeStats
	var problems []string
	pc, err := rocketmq.NewPushConsumer(
		consumer.WithGroupName(group),
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{cfg.namesrv})),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
		// Hand each pulled run of messages to one callback, so the order inside a callback is
		// the order in which the broker returned them.
		consumer.WithConsumeMessageBatchMaxSize(32),
		consumer.WithTls(cfg.tls),
	)
	if err != nil {
		return st, []string{fmt.Sprintf("NewPushConsumer: %v", err)}
	}
	if err := pc.Subscribe(topic, sel, c.consume); err != nil {
		return st, []string{fmt.Sprintf("Subscribe(%s, %q): %v", topic, sel.Expression, err)}
	}
	start := time.Now()
	if err := pc.Start(); err != nil {
		problems = append(problems, fmt.Sprintf("push consumer Start: %v", err))
		if p := shutdown("push consumer", pc.Shutdown); p != "" {
			problems = append(problems, p)
		}
		return st, problems
	}
	waitCtx, stopWait := context.WithTimeout(context.Background(), cfg.timeout)
	defer stopWait()
	select {
	case <-c.allIn:
		c.mu.Lock()
		st.all = c.lastAt.Sub(start)
		c.mu.Unlock()
	case <-waitCtx.Done():
		c.mu.Lock()
		problems = append(problems, fmt.Sprintf("after %s the consumer still lacked %d of %d messages (%d callbacks so far)",
			cfg.timeout, c.remaining, len(c.expected), c.calls))
		c.mu.Unlock()
	}
	for _, ch := range also {
		select {
		case <-ch:
		case <-waitCtx.Done(): // reported by the caller, which knows what it waited for
		}
	}
	time.Sleep(cfg.grace)
	if p := shutdown("push consumer", pc.Shutdown); p != "" {
		problems = append(problems, p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.firstAt.IsZero() {
		st.startup = c.firstAt.Sub(start)
	}
	st.calls = c.calls
	return st, problems
}

// check compares what arrived with what was sent: every expected message exactly once with the
// same fields, nothing else, and per queue the offsets in send order.
func (c *collector) check(topic, run string, contiguous bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var problems []string
	problems = append(problems, c.inCall...)

	sent := make([]*sentMsg, 0, len(c.expected))
	for _, s := range c.expected {
		sent = append(sent, s)
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i].seq < sent[j].seq })

	byQueue := map[int][]*recvMsg{}
	for _, s := range sent {
		rs := c.got[s.body]
		switch {
		case len(rs) == 0:
			what := "message"
			if s.batch {
				what = "batch member"
			}
			problems = append(problems, fmt.Sprintf("missing #%d %q (%s, tag %q, queue %d offset %d)", s.seq, short(s.body), what, s.tag, s.queueID, s.queueOffset))
			continue
		case len(rs) > 1:
			var where []string
			for _, r := range rs {
				where = append(where, fmt.Sprintf("callback %d queue %d offset %d reconsume %d", r.call, r.queueID, r.queueOffset, r.reconsumeTimes))
			}
			problems = append(problems, fmt.Sprintf("#%d %q delivered %d times: %s", s.seq, short(s.body), len(rs), strings.Join(where, "; ")))
		}
		r := rs[0]
		byQueue[r.queueID] = append(byQueue[r.queueID], r)
		diff := func(field string, got, want interface{}) {
			problems = append(problems, fmt.Sprintf("#%d %s: got %v, want %v", s.seq, field, got, want))
		}
		if r.topic != topic {
			diff("topic", r.topic, topic)
		}
		if r.keys != s.keys {
			diff("keys", strconv.Quote(r.keys), strconv.Quote(s.keys))
		}
		if r.tag != s.tag {
			diff("tag", strconv.Quote(r.tag), strconv.Quote(s.tag))
		}
		if v := r.props[propSeq]; v != strconv.Itoa(s.seq) {
			diff("property "+propSeq, strconv.Quote(v), strconv.Quote(strconv.Itoa(s.seq)))
		}
		if v := r.props[propRun]; v != run {
			diff("property "+propRun, strconv.Quote(v), strconv.Quote(run))
		}
		if r.queueID != s.queueID {
			diff("queue id", r.queueID, fmt.Sprintf("%d (from SendResult)", s.queueID))
		}
		if r.queueOffset != s.queueOffset {
			diff("queue offset", r.queueOffset, fmt.Sprintf("%d (from SendResult)", s.queueOffset))
		}
		if r.offsetMsgID != s.offsetMsgID {
			diff("OffsetMsgId", r.offsetMsgID, s.offsetMsgID+" (from SendResult)")
		}
		if s.msgID != "" && r.msgID != s.msgID {
			diff("MsgId", r.msgID, s.msgID+" (from SendResult)")
		}
		if r.msgID == "" {
			diff("MsgId", `""`, "an id")
		}
		if r.reconsumeTimes != 0 {
			diff("ReconsumeTimes", r.reconsumeTimes, 0)
		}
		// The broker stores CRC32 of the body as sent (compressed bodies: of the compressed bytes),
		// masked to 31 bits.
		if r.sysFlag&primitive.FlagCompressed == 0 {
			if want := int32(crc32.ChecksumIEEE([]byte(r.body)) & 0x7fffffff); r.bodyCRC != want {
				diff("BodyCRC", r.bodyCRC, want)
			}
		}
		if r.bornTimestamp <= 0 || r.storeTimestamp <= 0 {
			diff("born/store timestamps", fmt.Sprintf("%d/%d", r.bornTimestamp, r.storeTimestamp), "both > 0")
		}
	}
	for i, r := range c.stray {
		if i == 10 {
			problems = append(problems, fmt.Sprintf("... %d more unexpected deliveries", len(c.stray)-10))
			break
		}
		problems = append(problems, fmt.Sprintf("unexpected delivery %q (topic %s, tag %q, queue %d offset %d)",
			short(r.body), r.topic, r.tag, r.queueID, r.queueOffset))
	}

	// Per queue, offsets must follow send order (and, when every message of the topic was
	// expected, be contiguous from 0).
	queues := make([]int, 0, len(byQueue))
	for q := range byQueue {
		queues = append(queues, q)
	}
	sort.Ints(queues)
	for _, q := range queues {
		rs := byQueue[q]
		sort.Slice(rs, func(i, j int) bool { return rs[i].queueOffset < rs[j].queueOffset })
		for i, r := range rs {
			if contiguous && r.queueOffset != int64(i) {
				problems = append(problems, fmt.Sprintf("queue %d: offset %d at position %d (want contiguous offsets from 0)", q, r.queueOffset, i))
				break
			}
			if i > 0 {
				prev := rs[i-1]
				if r.queueOffset == prev.queueOffset {
					problems = append(problems, fmt.Sprintf("queue %d: two messages at offset %d", q, r.queueOffset))
				}
				if c.expected[r.body].seq < c.expected[prev.body].seq {
					problems = append(problems, fmt.Sprintf("queue %d: #%d at offset %d was sent before #%d at offset %d",
						q, c.expected[r.body].seq, r.queueOffset, c.expected[prev.body].seq, prev.queueOffset))
				}
			}
		}
	}
	return problems
}

func short(body string) string {
	if len(body) > 60 {
		return fmt.Sprintf("%s...(%d bytes)", body[:60], len(body))
	}
	return body
}

func queueSummary(ss []*sentMsg) string {
	counts := map[int]int{}
	for _, s := range ss {
		counts[s.queueID]++
	}
	qs := make([]int, 0, len(counts))
	for q := range counts {
		qs = append(qs, q)
	}
	sort.Ints(qs)
	parts := make([]string, 0, len(qs))
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("q%d:%d", q, counts[q]))
	}
	return strings.Join(parts, ",")
}

func produceConsume(cfg config) (string, []string) {
	const batchSize = 5
	run := newRunID()
	topic := "GoInteropPC_" + run
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
	tags := []string{"TagA", "TagB"}
	sendStart := time.Now()
	for i := 0; i < cfg.count; i++ {
		body := fmt.Sprintf("go-interop %s #%03d", run, i)
		if i%50 == 7 {
			// Over the client's 4 KiB threshold: sent zlib-compressed with the compressed sysflag.
			body += " " + strings.Repeat("0123456789abcdef", 400)
		}
		m, s := buildMessage(topic, run, i, body, tags[i%2])
		if err := sendOne(p, m, s); err != nil {
			problems = append(problems, err.Error())
			if len(problems) >= 10 && len(sent) == 0 {
				problems = append(problems, "giving up sending: no send succeeded")
				return details, problems
			}
			continue
		}
		sent = append(sent, s)
	}
	var ms []*primitive.Message
	var bs []*sentMsg
	for j := 0; j < batchSize; j++ {
		seq := cfg.count + j
		m, s := buildMessage(topic, run, seq, fmt.Sprintf("go-interop %s batch #%03d", run, seq), tags[seq%2])
		ms, bs = append(ms, m), append(bs, s)
	}
	singles := len(sent)
	batchNote, err := sendBatch(p, ms, bs)
	if err != nil {
		problems = append(problems, err.Error())
		batchNote = "batch=failed"
	} else {
		sent = append(sent, bs...)
	}
	sendTime := time.Since(sendStart)
	details += fmt.Sprintf(" sent=%d+%d queues=%s %s send=%s", singles, len(sent)-singles, queueSummary(sent), batchNote, sendTime.Round(time.Millisecond))
	if len(sent) == 0 {
		return details, problems
	}

	c := newCollector(cfg, sent)
	st, cp := consumeAll(cfg, topic, "GoInteropCG_"+run, consumer.MessageSelector{Type: consumer.TAG, Expression: "*"}, c)
	problems = append(problems, cp...)
	problems = append(problems, c.check(topic, run, len(sent) == cfg.count+batchSize)...)
	details += fmt.Sprintf(" received=%d callbacks=%d firstDelivery=%s allDelivered=%s",
		len(c.got), st.calls, st.startup.Round(time.Millisecond), st.all.Round(time.Millisecond))
	return details, problems
}

func tagFilter(cfg config) (string, []string) {
	run := newRunID()
	topic := "GoInteropTF_" + run
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
	var sent, want []*sentMsg
	tags := []string{"TagA", "TagB", "TagC", "TagD", ""}
	perTag := map[string]int{}
	sendStart := time.Now()
	for i := 0; i < cfg.count; i++ {
		tag := tags[i%len(tags)]
		m, s := buildMessage(topic, run, i, fmt.Sprintf("go-interop %s %s #%03d", run, tag, i), tag)
		if err := sendOne(p, m, s); err != nil {
			problems = append(problems, err.Error())
			if len(problems) >= 10 && len(sent) == 0 {
				problems = append(problems, "giving up sending: no send succeeded")
				return details, problems
			}
			continue
		}
		sent = append(sent, s)
		perTag[tag]++
		if tag == "TagA" || tag == "TagC" {
			want = append(want, s)
		}
	}
	sendTime := time.Since(sendStart)
	details += fmt.Sprintf(" sent=%d (TagA:%d TagB:%d TagC:%d TagD:%d none:%d) queues=%s send=%s",
		len(sent), perTag["TagA"], perTag["TagB"], perTag["TagC"], perTag["TagD"], perTag[""],
		queueSummary(sent), sendTime.Round(time.Millisecond))
	if len(want) == 0 {
		return details, append(problems, "no TagA/TagC message was sent")
	}

	c := newCollector(cfg, want)
	// Messages with other tags are not expected: any delivery of one is reported as unexpected.
	st, cp := consumeAll(cfg, topic, "GoInteropCG_"+run, consumer.MessageSelector{Type: consumer.TAG, Expression: "TagA || TagC"}, c)
	problems = append(problems, cp...)
	problems = append(problems, c.check(topic, run, false)...)
	details += fmt.Sprintf(" selector=\"TagA || TagC\" expected=%d received=%d callbacks=%d firstDelivery=%s allDelivered=%s",
		len(want), len(c.got), st.calls, st.startup.Round(time.Millisecond), st.all.Round(time.Millisecond))
	return details, problems
}
