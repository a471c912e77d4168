import { describe, expect, it } from 'vitest';
import { checkPlan, dependentsOf, extractPlanJson } from './plan.js';

const agents = ['coder', 'file', 'casual', 'web'];
const subtask = (id: string, need: string[] = [], agent = 'coder') => ({ id, agent, task: `task ${id}`, need });

describe('extractPlanJson', () => {
  it('reads a ```json fence, a submit_plan tool call, or a bare JSON answer', () => {
    expect(extractPlanJson({ content: 'Plan:\n```json\n{"plan": []}\n```' }).json).toEqual({ plan: [] });
    expect(extractPlanJson({ content: null, toolArguments: '{"plan": [1]}' }).json).toEqual({ plan: [1] });
    expect(extractPlanJson({ content: 'Sure! {"plan": [2]} Hope it helps.' }).json).toEqual({ plan: [2] });
  });

  it('says what to do when there is no plan or it is not JSON', () => {
    expect(extractPlanJson({ content: 'I would start by...' }).error).toBe(
      'The answer holds no plan. Answer with the plan as JSON in a ```json block.',
    );
    expect(extractPlanJson({ content: '```json\n{plan: []}\n```' }).error).toMatch(
      /^The plan is not valid JSON \(.+\)\. Send it again as one JSON object in a ```json block\.$/,
    );
  });
});

describe('checkPlan', () => {
  it('accepts a DAG, numbers given as ids included', () => {
    const check = checkPlan(
      {
        plan: [
          { id: 1, agent: 'coder', task: 'a', need: [] },
          { id: 2, agent: 'casual', task: 'b', need: [1] },
        ],
      },
      { agents, maxSubtasks: 5 },
    );
    expect(check).toEqual({
      ok: true,
      plan: [
        { id: '1', agent: 'coder', task: 'a', need: [] },
        { id: '2', agent: 'casual', task: 'b', need: ['1'] },
      ],
    });
  });

  it('reports every problem at once', () => {
    const check = checkPlan(
      { plan: [subtask('1', ['7']), subtask('2', [], 'wizard'), subtask('2')] },
      { agents, maxSubtasks: 2 },
    );
    expect(check).toEqual({
      ok: false,
      errors: [
        'the plan has 3 subtasks; at most 2 are allowed: merge some',
        'subtask id 2 is used twice: give every subtask its own id',
        'subtask 1 needs 7, which does not exist',
        'subtask 2 uses agent "wizard", which does not exist: use one of coder, file, casual, web',
      ],
    });
  });

  it('finds a cycle and names its path', () => {
    expect(
      checkPlan(
        { plan: [subtask('a', ['c']), subtask('b', ['a']), subtask('c', ['b']), subtask('d')] },
        { agents, maxSubtasks: 9 },
      ),
    ).toEqual({
      ok: false,
      errors: [
        'subtasks a -> b -> c -> a need each other in a cycle: a subtask can only need subtasks that can finish before it',
      ],
    });
  });

  it('names the field of a subtask that breaks the schema', () => {
    expect(checkPlan({ plan: [{ id: '1', agent: 'coder', need: [] }] }, { agents, maxSubtasks: 9 })).toMatchObject({
      ok: false,
      errors: [expect.stringMatching(/^subtask #1 field "task": /)],
    });
    expect(checkPlan('just text', { agents, maxSubtasks: 9 })).toMatchObject({
      ok: false,
      errors: [expect.stringMatching(/^the answer: /)],
    });
  });
});

describe('dependentsOf', () => {
  it('finds direct and indirect dependents in the order they are reached', () => {
    const plan = [subtask('1'), subtask('2', ['1']), subtask('3', ['2']), subtask('4'), subtask('5', ['4', '3'])];
    expect(dependentsOf(plan, '1')).toEqual(['2', '3', '5']);
    expect(dependentsOf(plan, '4')).toEqual(['5']);
  });
});
