/** Every Redis key and channel agentq uses, in one place, under one prefix. */

export interface Keys {
  prefix: string;
  /** BullMQ's own prefix for its queues. */
  bullPrefix: string;
  task(taskId: string): string;
  messages(taskId: string): string;
  events(taskId: string): string;
  eventsChannel(taskId: string): string;
  cancelChannel: string;
  /** Sorted sets of task ids by creation order: all tasks, and one per status. */
  allTasks: string;
  statusPrefix: string;
  tasksWithStatus(status: string): string;
  orderCounter: string;
}

export function createKeys(prefix: string): Keys {
  return {
    prefix,
    bullPrefix: `${prefix}:bull`,
    task: (taskId) => `${prefix}:task:${taskId}`,
    messages: (taskId) => `${prefix}:task:${taskId}:messages`,
    events: (taskId) => `${prefix}:task:${taskId}:events`,
    eventsChannel: (taskId) => `${prefix}:events:${taskId}`,
    cancelChannel: `${prefix}:cancel`,
    allTasks: `${prefix}:tasks`,
    statusPrefix: `${prefix}:tasks:status:`,
    tasksWithStatus: (status) => `${prefix}:tasks:status:${status}`,
    orderCounter: `${prefix}:tasks:order`,
  };
}
