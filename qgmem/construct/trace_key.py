"""What the stored traces' build key holds besides the build config (construct/build.py): the word lists that
decide traces and the version of the grouping code, so stored traces are regrouped whenever either changes."""

from __future__ import annotations

from qgmem.words import digest

# the word lists that decide traces (their digest joins the traces' build key)
TRACE_WORDS = ("irregular_verbs", "person_nouns", "relation_grammar", "state_changes", "state_classes", "state_ignore",
               "state_relations", "stopwords", "subject_modifiers", "unresolved_subjects", "workplaces",
               "occupations")
# part of the traces' build key: bump it when a change of the grouping code changes traces, so stored traces are
# regrouped, not served. What each version added:
#  1 subject and class; 2 structural links; 3 whole-turn changes (turn_changes.py); 4 a pronoun object's thing;
#  5 partner status; 6 a habit at a named firm is a job; 7 a thing leaving its owner; 8 home; 9 job; 10 leaving a
#  group; 11 a plan called off; 12 an answer holds its question; 13 third persons; 14 an update of the other's words
#  moves; 15 a thing had, then sold; 16 "still": a state told again; 17 a third person's state told by either
#  speaker; 18 a thing let go, in the passive; 19 the thing gone, named in a fragment; 20 "finished with", "I never
#  went."; 21 a thing of three words; 22 "a school took it"; 23 "still" in another sentence; 24 times alone;
#  25 news of the one spoken to ("So you're ...!", "X says you're in ..."); 26 a new partner or home outranks
#  a link by shared words; 27 "left" read as "leave"; 28 a name in a change; 29 a question that kept
#  no unit has a speaker; "by now"; 30 the shift worked (work_shift.py); 31 "put X on
#  Tuesdays"; 32 "X and I have parted", "I do nights", "Bought by ...", "told my aunt you ..."; 33 irregular
#  pasts (words/irregular_verbs.txt); 34 "disappeared", "Gone to my ...", "four night shifts", "no nights";
#  35 "I'm off the trucks", "were married", "returned the ring"; 36 "on the day shift"; 37 names and words in
#  every Latin, Greek and Cyrillic alphabet ("Sigrún and I", "at Ġgantija"; construct/letters.py); 38 a turn telling
#  an ending and a beginning changes the state its ending names; 39 "a couple", "an item", "tied the knot", "went our
#  own ways", "my husband X"; 40 a job at a place of work named by a common noun ("at my uncle's farm";
#  words/workplaces.txt); 41 one word of a thing named as gone is enough ("The piano is gone.");
#  42 "we split", "X and I married", "going steady"; 43 "Called off." as an answer, "I let a teacher in X have it";
#  44 a thing gone named by nothing is what the turn before says, question or not ("... your bike." -> "Stolen.");
#  45 only a turn before of the same session; 46 "going to <a place> ... now" is a change; 47 a change links the
#  state told (having the thing, a claim about the person, the thing its sentence names) over a later mention;
#  48 "let us all go", "the depot closed in March", "has new owners", "a couple bought it", every reading of a
#  sentence, and the thing named as gone outweighs other shared words; 49 "X and I got together", "two years as a
#  couple", "called time on it", "you and X called it off", "broke off the engagement"; 50 "X and I finished", "I let
#  my brother buy it", "gave him to my nephew", "has belonged to", "I was done with", "put X behind me", an article
#  before a place of work, no adverb as a verb of work, a pronoun for a thing named adds only who got it; 51 "my
#  cousin on the boat tells me you ...", a turn telling a change of the state a remark names makes it a change;
#  52 an occupation with a mark of its beginning ("I'm a postman now"; words/occupations.txt) or alone, a change
#  of the job before a weak one, "the trek is off", "moved the dinner to the eleventh of November", "isn't in
#  December any more", "brought forward", "gave it to him", "let her go to a teacher", "been seeing a violinist
#  from the opera", "a pair", "married again", a part of the day worked, the hours of a habit ("from six to nine")
#  53 a question of a turn that also states something tells the asker's own things ("for my book group?");
#  54 homes: "I am, in ...", "under my father's roof", "sleep in my old bedroom", "board in", a compound, a "-bed",
#  "we've a cottage on ...", "Still in X." and "In a room in X." as answers, "... and moved up to", "had a house
#  since", "You've moved!"; 55 things gone: "paid me well for her", "took his money for it", "let it go for",
#  "Taken from outside ...", "is my wife's brother's now", "has been his since", "has had it since", "went to X as
#  his wedding gift", "both"/"all" before a thing; 56 jobs: held since a recent time is begun, "training as", "opened
#  my own shop", "hung up my hard hat in July", a habit or being at work since a recent time (weak); 57 partners:
#  "going out with X, the ...", "seeing X now", "walked out together", "a new man", "asked her to marry me", "gave X
#  back his ring"; 58 a schedule told in times alone before a colon ("Tuesdays and Saturdays now: I follow ...");
#  59 "hired me as", "went into business", "hung up the apron", "since November I'm assistant pharmacist" after a
#  colon, "I live here now", "X and I had our wedding", "none of us went"; 60 "these days I can ..." tells no change;
#  61 "Look at you, head chef at X!", "a man of leisure", "you've left the bank and ..."; 62 a habit told with the
#  hours of work ("the early shift", "earlies", "for a living") is a job; 63 "for" before "now" tells no change
#  only with a pronoun ("quiet for us now"; not "for the food bank now"), "let the class go on without me"; 64 a
#  shift after a habit's place ("I work the chairlift, the early shift"), "my turn starts at one and ends at nine";
#  65 plans: "I'm not going (to X after all)", "Next summer now.", "going in December instead", "won't open till next
#  spring", "the wedding's now the fourteenth of December", "we moved the wedding", "there was no chalet in the end";
#  66 groups left: "I've left it.", "walked away in August", "put the oar down for good", "let my membership of X
#  lapse", "not in the chama any more", "the cooperative and I parted", "has seen the last of you", "my last with them";
#  67 homes: "you're a Pokhara man now", "In Lankaran since May.", "A little terrace in X.", "been staying with my
#  grandmother in X"; 68 a home held since a recent time ("since November I've rented two rooms") is a move; 69 read
#  on held-out 26: "hired me in March", "moved away", "took the ground floor", "had a room over ... since", "gone our
#  different ways", "aren't getting married after all", "I have a fiancé", a partner after an ending in one turn,
#  "bowed out", "handed in my rope to the band", "withdrew my membership", "passed it on to him", "didn't go up in";
#  70 a relative's claim ("Valji's brother joined the troupe") is not its possessor's state; 71 the change probe
#  (construct/change_probe.py) links a change the rules left (its weights' digest joins the key as well); 72 not to a
#  state the rules already saw change; 73 the probe's pair head picks the state a change changes (class agreement
#  dropped); 74 a shared image's unit is neither the probe's change nor its state
TRACE_VERSION = 74


def trace_key_parts() -> list[str | int]:
    """What this module adds to the traces' build key: the digest of the word lists and the version."""
    return [digest(TRACE_WORDS), TRACE_VERSION]
