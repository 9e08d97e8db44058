package metrics

import (
	"bytes"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics: src's series, the Go runtime's and the
// process's (go_*, process_*: CPU seconds, resident memory, open files).
func Handler(src Source) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewCollector(src), collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}

// IsHTTP reports whether a connection's first bytes are an HTTP GET: a
// request line "GET /... HTTP/1.x", whole in them. A RESP client never
// sends that (an inline GET of a key starting "/" with a second argument
// "HTTP/1.1" would be refused for its arity anyway).
func IsHTTP(b []byte) bool {
	line, _, ok := bytes.Cut(b, []byte("\r\n"))
	return ok && bytes.HasPrefix(line, []byte("GET /")) && bytes.Contains(line, []byte(" HTTP/1."))
}

// Endpoint serves HTTP on connections handed to it one by one: the
// main port's connections that IsHTTP recognized.
type Endpoint struct {
	srv   *http.Server
	ln    *connListener
	start sync.Once
}

// NewEndpoint serves h on the connections Serve gets, from the first.
func NewEndpoint(h http.Handler) *Endpoint {
	return &Endpoint{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second},
		ln: &connListener{conns: make(chan net.Conn), done: make(chan struct{})}}
}

// Serve answers nc, whose first bytes, already read, are head.
func (e *Endpoint) Serve(nc net.Conn, head []byte) {
	e.start.Do(func() { go func() { _ = e.srv.Serve(e.ln) }() })
	c := &headConn{Conn: nc, head: bytes.Clone(head)}
	select {
	case e.ln.conns <- c:
	case <-e.ln.done:
		nc.Close()
	}
}

// Close stops the endpoint and closes its connections.
func (e *Endpoint) Close() { _ = e.srv.Close() }

// Listen serves h on each of addrs (--metrics_port) until the returned
// stop is called.
func Listen(addrs []string, h http.Handler) (stop func(), err error) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	var lns []net.Listener
	for _, a := range addrs {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, err
		}
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		go func() { _ = srv.Serve(ln) }()
	}
	return func() { _ = srv.Close() }, nil
}

// connListener is a net.Listener of the connections handed to it.
type connListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.TCPAddr{} }

// headConn is a connection whose first bytes were read elsewhere.
type headConn struct {
	net.Conn
	head []byte
}

func (c *headConn) Read(p []byte) (int, error) {
	if len(c.head) > 0 {
		n := copy(p, c.head)
		c.head = c.head[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
