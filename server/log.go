package server

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// Logger writes Redis-style log lines ("pid:M 21 Nov 2026 13:24:00.123 * msg").
type Logger struct {
	mu    sync.Mutex
	w     io.Writer
	level int
}

const (
	levelDebug = iota
	levelVerbose
	levelNotice
	levelWarning
	levelNothing
)

// LevelOf maps a Redis loglevel name to its rank; ok=false for unknown names.
func LevelOf(name string) (int, bool) {
	switch name {
	case "debug":
		return levelDebug, true
	case "verbose":
		return levelVerbose, true
	case "notice":
		return levelNotice, true
	case "warning":
		return levelWarning, true
	case "nothing":
		return levelNothing, true
	}
	return 0, false
}

// NewLogger logs to w at the given level name.
func NewLogger(w io.Writer, level string) *Logger {
	l, _ := LevelOf(level)
	return &Logger{w: w, level: l}
}

func (l *Logger) logf(level int, mark byte, format string, args ...any) {
	if l == nil || level < l.level {
		return
	}
	ts := time.Now().Format("02 Jan 2006 15:04:05.000")
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	fmt.Fprintf(l.w, "%d:M %s %c %s\n", os.Getpid(), ts, mark, msg)
	l.mu.Unlock()
}

func (l *Logger) Debugf(f string, a ...any)   { l.logf(levelDebug, '.', f, a...) }
func (l *Logger) Verbosef(f string, a ...any) { l.logf(levelVerbose, '-', f, a...) }
func (l *Logger) Noticef(f string, a ...any)  { l.logf(levelNotice, '*', f, a...) }
func (l *Logger) Warnf(f string, a ...any)    { l.logf(levelWarning, '#', f, a...) }

// gnetLogger routes gnet's own messages through this logger.
func (l *Logger) gnetLogger() logging.Logger { return gnetLog{l} }

type gnetLog struct{ l *Logger }

func (g gnetLog) Debugf(f string, a ...any) { g.l.Debugf(f, a...) }
func (g gnetLog) Infof(f string, a ...any)  { g.l.Verbosef(f, a...) }
func (g gnetLog) Warnf(f string, a ...any)  { g.l.Warnf(f, a...) }
func (g gnetLog) Errorf(f string, a ...any) { g.l.Warnf(f, a...) }
func (g gnetLog) Fatalf(f string, a ...any) { g.l.Warnf(f, a...) }
