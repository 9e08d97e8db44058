package script

import "github.com/yuin/gopher-lua/ast"

// namesCommands reports whether every command a script can call is a
// string literal in its text: each redis.call and redis.pcall is called
// directly with a literal first argument, and nothing else can reach them.
// With tiering on, a script for which this does not hold is run on a
// coordinator like one whose text names SORT (Script.MaySort, read by the
// server's routing): its SORT may be named at run time
// (redis.call(ARGV[1], ...)), and a SORT inline on a shard that has
// written could only read offloaded BY/GET values blocking.
//
// The check is conservative: any other use of the global redis (a local
// alias, pairs(redis), redis:call), redis.call not in call position
// (pcall(redis.call, ...)), the functions that reach globals or code
// indirectly (_G, getfenv, rawget, load ...), and any construct it does not
// know make it false.
//
// names are the literal names it calls (as written), when it holds.
//
// A local bound to redis.call or redis.pcall (local rcall = redis.call, as
// BullMQ's scripts begin) is a name for it: calls through it count as
// calls, any other use of that name anywhere (an argument, a new value)
// makes the check false. A first walk collects those names.
func namesCommands(chunk []ast.Stmt) (ok bool, names []string) {
	w := nameWalker{ok: true, collect: true, aliases: map[string]bool{}}
	w.stmts(chunk)
	w.collect, w.names = false, nil
	w.stmts(chunk)
	if !w.ok {
		return false, nil
	}
	return true, w.names
}

// opaqueGlobals reach the redis table, or code, without naming it.
var opaqueGlobals = map[string]bool{
	"_G": true, "getfenv": true, "setfenv": true, "rawget": true, "rawset": true,
	"rawequal": true, "getmetatable": true, "setmetatable": true, "debug": true,
	"load": true, "loadstring": true, "loadfile": true, "dofile": true, "require": true,
	"module": true, "newproxy": true,
}

type nameWalker struct {
	ok    bool
	names []string
	// collect: the first walk, which only gathers aliases (the names
	// bound to redis.call or redis.pcall) and fails nothing.
	collect bool
	aliases map[string]bool
}

func (w *nameWalker) fail() {
	if !w.collect {
		w.ok = false
	}
}

// isAlias: a call through a name bound to redis.call or redis.pcall.
func (w *nameWalker) isAlias(e ast.Expr) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && w.aliases[id.Value]
}

func (w *nameWalker) stmts(list []ast.Stmt) {
	for _, s := range list {
		if !w.ok {
			return
		}
		w.stmt(s)
	}
}

func (w *nameWalker) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		for i, e := range s.Lhs {
			id, isName := e.(*ast.IdentExpr)
			if isName && i < len(s.Rhs) && isRedisCall(s.Rhs[i]) {
				w.bind(id.Value)
				continue
			}
			w.expr(e)
			if i < len(s.Rhs) {
				w.expr(s.Rhs[i])
			}
		}
		for i := len(s.Lhs); i < len(s.Rhs); i++ {
			w.expr(s.Rhs[i])
		}
	case *ast.LocalAssignStmt:
		for i, e := range s.Exprs {
			if i < len(s.Names) && isRedisCall(e) {
				w.bind(s.Names[i])
				continue
			}
			w.expr(e)
		}
	case *ast.FuncCallStmt:
		w.expr(s.Expr)
	case *ast.DoBlockStmt:
		w.stmts(s.Stmts)
	case *ast.WhileStmt:
		w.expr(s.Condition)
		w.stmts(s.Stmts)
	case *ast.RepeatStmt:
		w.stmts(s.Stmts)
		w.expr(s.Condition)
	case *ast.IfStmt:
		w.expr(s.Condition)
		w.stmts(s.Then)
		w.stmts(s.Else)
	case *ast.NumberForStmt:
		w.expr(s.Init)
		w.expr(s.Limit)
		w.expr(s.Step)
		w.stmts(s.Stmts)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs)
		w.stmts(s.Stmts)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			w.expr(s.Name.Func)
			w.expr(s.Name.Receiver)
		}
		if s.Func != nil {
			w.stmts(s.Func.Stmts)
		}
	case *ast.ReturnStmt:
		w.exprs(s.Exprs)
	case *ast.BreakStmt, *ast.LabelStmt, *ast.GotoStmt:
	default:
		w.fail()
	}
}

// bind records name as an alias in the first walk; in the second, a name
// bound more than once is still an alias (every use is checked).
func (w *nameWalker) bind(name string) {
	if w.collect {
		w.aliases[name] = true
	}
}

func (w *nameWalker) exprs(list []ast.Expr) {
	for _, e := range list {
		w.expr(e)
	}
}

// isRedisCall: redis.call or redis.pcall (redis["call"] parses the same).
func isRedisCall(e ast.Expr) bool {
	a, ok := e.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	obj, ok := a.Object.(*ast.IdentExpr)
	key, isStr := a.Key.(*ast.StringExpr)
	return ok && obj.Value == "redis" && isStr && (key.Value == "call" || key.Value == "pcall")
}

func (w *nameWalker) expr(e ast.Expr) {
	if e == nil || !w.ok {
		return
	}
	switch e := e.(type) {
	case *ast.IdentExpr:
		// Bare redis (an alias, pairs(redis), redis:call) or a way
		// around names.
		if e.Value == "redis" || opaqueGlobals[e.Value] || w.aliases[e.Value] {
			w.fail()
		}
	case *ast.AttrGetExpr:
		if obj, ok := e.Object.(*ast.IdentExpr); ok && obj.Value == "redis" {
			// redis.<name>: fine unless it is call or pcall out of call
			// position, or the name is computed.
			if _, isStr := e.Key.(*ast.StringExpr); !isStr || isRedisCall(e) {
				w.fail()
			}
			return
		}
		w.expr(e.Object)
		w.expr(e.Key)
	case *ast.FuncCallExpr:
		if isRedisCall(e.Func) || e.Receiver == nil && w.isAlias(e.Func) {
			if len(e.Args) == 0 {
				w.fail()
				return
			}
			name, lit := e.Args[0].(*ast.StringExpr)
			if !lit {
				w.fail()
				return
			}
			w.names = append(w.names, name.Value)
		} else {
			w.expr(e.Func)
		}
		w.expr(e.Receiver)
		w.exprs(e.Args)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			w.expr(f.Key)
			w.expr(f.Value)
		}
	case *ast.LogicalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.StringConcatOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.ArithmeticOpExpr:
		w.expr(e.Lhs)
		w.expr(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryNotOpExpr:
		w.expr(e.Expr)
	case *ast.UnaryLenOpExpr:
		w.expr(e.Expr)
	case *ast.FunctionExpr:
		w.stmts(e.Stmts)
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr, *ast.NumberExpr, *ast.StringExpr, *ast.Comma3Expr:
	default:
		w.fail()
	}
}
