package cri

import (
	"reflect"
	"testing"
)

func objs(states map[string]int32) []object {
	out := []object{}
	for id, st := range states {
		out = append(out, object{id: id, state: st})
	}
	return out
}

func TestSamplerCoversAllWhenFew(t *testing.T) {
	s := newSampler()
	got := s.pick(objs(map[string]int32{"b": 0, "a": 0}), 3)
	if want := []string{"a", "b"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("pick = %v, want %v", got, want)
	}
}

func TestSamplerRotatesAndPutsChangedFirst(t *testing.T) {
	s := newSampler()
	states := map[string]int32{"a": 0, "b": 0, "c": 0, "d": 0, "e": 0}
	if got := s.pick(objs(states), 2); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Fatalf("first pick = %v", got)
	}
	if got := s.pick(objs(states), 2); !reflect.DeepEqual(got, []string{"c", "d"}) {
		t.Fatalf("second pick = %v, want the rotation to go on", got)
	}
	states["b"] = 1 // changed state
	states["f"] = 0 // new object
	got := s.pick(objs(states), 3)
	if want := []string{"b", "f", "e"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("third pick = %v, want changed b and new f first, then the rotation (%v)", got, want)
	}
	if got := s.pick(objs(states), 2); !reflect.DeepEqual(got, []string{"f", "a"}) {
		t.Fatalf("fourth pick = %v, want the rotation to wrap", got)
	}
}
