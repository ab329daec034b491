package kernellog

// automaton is an Aho-Corasick DFA over bytes: one table lookup per byte of
// a line finds every occurrence of every literal.
type automaton struct {
	class  [256]uint16 // byte -> column; bytes in no literal share column 0
	width  int
	next   []int32   // state*width + column -> state
	output [][]int32 // state -> literals ending here (with those of its suffixes)
}

func newAutomaton(literals []string) *automaton {
	a := &automaton{width: 1}
	for _, lit := range literals {
		for i := 0; i < len(lit); i++ {
			if a.class[lit[i]] == 0 {
				a.class[lit[i]] = uint16(a.width)
				a.width++
			}
		}
	}
	goto_, out := a.trie(literals)
	a.link(goto_, out)
	return a
}

// trie builds the goto function; state 0 is the root; -1 is no edge.
func (a *automaton) trie(literals []string) ([][]int32, [][]int32) {
	newState := func() []int32 {
		row := make([]int32, a.width)
		for i := range row {
			row[i] = -1
		}
		return row
	}
	goto_ := [][]int32{newState()}
	out := [][]int32{nil}
	for id, lit := range literals {
		s := int32(0)
		for i := 0; i < len(lit); i++ {
			c := a.class[lit[i]]
			if goto_[s][c] < 0 {
				goto_ = append(goto_, newState())
				out = append(out, nil)
				goto_[s][c] = int32(len(goto_) - 1)
			}
			s = goto_[s][c]
		}
		out[s] = append(out[s], int32(id))
	}
	return goto_, out
}

// link adds failure transitions breadth-first, making the DFA complete.
func (a *automaton) link(goto_ [][]int32, out [][]int32) {
	n := len(goto_)
	a.next = make([]int32, n*a.width)
	fail := make([]int32, n)
	queue := make([]int32, 0, n)
	for c := 0; c < a.width; c++ {
		s := goto_[0][c]
		if s < 0 {
			s = 0
		} else {
			queue = append(queue, s)
		}
		a.next[c] = s
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		out[s] = append(out[s], out[fail[s]]...)
		for c := 0; c < a.width; c++ {
			t := goto_[s][c]
			if t < 0 {
				a.next[int(s)*a.width+c] = a.next[int(fail[s])*a.width+c]
				continue
			}
			fail[t] = a.next[int(fail[s])*a.width+c]
			a.next[int(s)*a.width+c] = t
			queue = append(queue, t)
		}
	}
	a.output = out
}

// scan calls found for each literal occurring in line (possibly repeatedly).
func (a *automaton) scan(line string, found func(id int32)) {
	s := int32(0)
	w := a.width
	for i := 0; i < len(line); i++ {
		s = a.next[int(s)*w+int(a.class[line[i]])]
		if out := a.output[s]; out != nil {
			for _, id := range out {
				found(id)
			}
		}
	}
}
