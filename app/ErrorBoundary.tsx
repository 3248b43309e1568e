// Never a blank page: a render error in a panel shows as a message with a retry button.
import { Component, type ReactNode } from "react";

export class ErrorBoundary extends Component<{ name: string; children: ReactNode }, { error: Error | null }> {
  override state = { error: null as Error | null };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  override render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="banner banner-error" role="alert" data-testid="panel-error">
        <strong>{this.props.name} failed to render:</strong> {this.state.error.message}{" "}
        <button type="button" onClick={() => this.setState({ error: null })}>
          Retry
        </button>
      </div>
    );
  }
}
