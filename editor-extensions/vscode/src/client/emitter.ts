// A minimal event emitter with the `vscode.EventEmitter` shape, for modules that must not import vscode.

export interface Disposable {
  dispose(): void;
}

export type Listener<T> = (value: T) => void;
export type Event<T> = (listener: Listener<T>) => Disposable;

export class Emitter<T> {
  private readonly listeners = new Set<Listener<T>>();

  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  };

  fire(value: T): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(value);
      } catch (error) {
        // one failing listener must not starve the others (nor the connection's reader)
        console.error("openvaala: listener failed", error);
      }
    }
  }

  dispose(): void {
    this.listeners.clear();
  }
}

export class DisposableStore implements Disposable {
  private readonly items: Disposable[] = [];

  add<D extends Disposable>(item: D): D {
    this.items.push(item);
    return item;
  }

  dispose(): void {
    for (const item of this.items.splice(0).reverse()) item.dispose();
  }
}
