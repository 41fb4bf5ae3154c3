import { show } from '#kernel/errors.js';
import { truncateText } from '#kernel/text.js';
import { dispatchError } from './errors.js';

export type TaskStatus = 'pending' | 'in-progress' | 'completed';

/** One checkbox item of tasks.md, in document order. Persisted (snake_case) inside the progress facts. */
export interface ParsedTask {
  id: string;
  description: string;
  status: TaskStatus;
  /** 1-based line of the checkbox. */
  line: number;
  /** The id of the enclosing task when the item is nested under another item, else null. */
  parent_id: string | null;
  prompt?: string;
  requirements?: string[];
}

const MARKERS: Readonly<Record<string, TaskStatus>> = {
  ' ': 'pending',
  '-': 'in-progress',
  x: 'completed',
  X: 'completed',
};
/**
 * Any list item that opens with a checkbox, well-formed or not: a bracket pair of at most one code unit,
 * or a short one (an astral emoji, `[xx]`, `[  ]`) followed by a task id. Left as prose, such a task
 * would silently never be dispatched.
 */
const CHECKBOX_LIKE = /^(\s*)[-*+]\s+\[(?:.?\]|[^\]]{0,8}\]\s+\d+(?:\.\d+)*\.?\s)/;
// `s`: a U+2028/U+2029 inside a description or prompt is text, not the end of the item.
const CHECKBOX = /^(\s*)[-*+]\s+\[(.)\]\s+(\S.*)$/s;
const TASK_ID = /^(\d+(?:\.\d+)*)\.?\s+(\S.*)$/s;
const META = /^(\s*)(?:[-*+]\s+)?_(Prompt|Requirements):\s*(.*)$/s;

interface OpenItem {
  task: ParsedTask;
  indent: number;
}

/**
 * Parse tasks.md text into its checkbox items. Lines that are neither checkboxes nor `_Prompt:` /
 * `_Requirements:` metadata are prose and ignored; anything that looks like a task but is not a valid
 * one is refused with the line number, because guessing would dispatch the wrong task.
 */
export function parseTasksMarkdown(text: string, sourcePath: string): ParsedTask[] {
  const tasks: ParsedTask[] = [];
  const seen = new Map<string, number>();
  const stack: OpenItem[] = [];
  // A lone CR ends a line too (CommonMark), so files saved with classic Mac endings keep their lines.
  const lines = text.split(/\r\n|\r|\n/);
  lines.forEach((raw, index) => {
    const lineNo = index + 1;
    const fail = (why: string, hint: string): never => {
      throw dispatchError('progress_ledger_parse_failed', `${sourcePath}:${lineNo}: ${why}`, hint, {
        path: sourcePath,
        line: lineNo,
        text: truncateText(raw, 200, ''),
      });
    };
    const like = CHECKBOX_LIKE.exec(raw);
    if (like) {
      const task = parseCheckbox(raw, lineNo, fail);
      const indent = (like[1] ?? '').length;
      while (stack.length > 0 && (stack[stack.length - 1] as OpenItem).indent >= indent) stack.pop();
      task.parent_id = stack.length > 0 ? (stack[stack.length - 1] as OpenItem).task.id : null;
      const previous = seen.get(task.id);
      if (previous !== undefined)
        fail(`task id ${show(task.id)} repeats the task on line ${previous}`, 'give every task a unique id');
      seen.set(task.id, lineNo);
      tasks.push(task);
      stack.push({ task, indent });
      return;
    }
    const meta = META.exec(raw);
    if (meta) attachMeta(stack, meta, fail);
  });
  if (tasks.length === 0) {
    throw dispatchError(
      'progress_ledger_parse_failed',
      `${sourcePath}: no task items found`,
      'list tasks as "- [ ] 1. Description" (status [ ] pending, [-] in progress, [x] completed)',
      { path: sourcePath, line: 0 },
    );
  }
  return tasks;
}

function parseCheckbox(raw: string, line: number, fail: (why: string, hint: string) => never): ParsedTask {
  const box = CHECKBOX.exec(raw);
  const marker = box?.[2] ?? '';
  const status = box ? MARKERS[marker] : undefined;
  if (!box || status === undefined) {
    return fail(
      `unknown task status marker in ${show(raw.trim(), 60)}`,
      'use [ ] pending, [-] in progress or [x] completed, followed by the task id and description',
    );
  }
  const item = TASK_ID.exec(box[3] ?? '');
  if (!item)
    return fail(
      `task ${show((box[3] ?? '').trim(), 60)} has no id`,
      'start the item with a dotted numeric id, e.g. "- [ ] 2.1 Write the parser"',
    );
  return { id: item[1] as string, description: (item[2] as string).trim(), status, line, parent_id: null };
}

function attachMeta(stack: OpenItem[], meta: RegExpExecArray, fail: (why: string, hint: string) => never): void {
  const indent = (meta[1] ?? '').length;
  const kind = meta[2] as 'Prompt' | 'Requirements';
  while (stack.length > 0 && (stack[stack.length - 1] as OpenItem).indent >= indent) stack.pop();
  const owner = stack[stack.length - 1];
  if (!owner) {
    fail(`_${kind}: is not under a task item`, `indent the _${kind}: line below the task it belongs to`);
    return;
  }
  const value = stripEmphasis(meta[3] ?? '');
  if (kind === 'Prompt') {
    if (owner.task.prompt !== undefined)
      fail(`task ${show(owner.task.id)} has a second _Prompt: line`, 'keep one _Prompt: line per task');
    if (value.length === 0)
      fail(`task ${show(owner.task.id)} has an empty _Prompt:`, 'write the prompt after "_Prompt:" or remove the line');
    owner.task.prompt = value;
  } else {
    if (owner.task.requirements !== undefined)
      fail(
        `task ${show(owner.task.id)} has a second _Requirements: line`,
        'list all requirement ids on one _Requirements: line',
      );
    owner.task.requirements = value
      .split(',')
      .map((part) => part.trim())
      .filter((part) => part.length > 0);
  }
}

/** `_Prompt: text_` is Markdown emphasis: drop the closing underscore. */
function stripEmphasis(value: string): string {
  const trimmed = value.trim();
  return trimmed.endsWith('_') ? trimmed.slice(0, -1).trimEnd() : trimmed;
}
